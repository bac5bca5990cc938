import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeTimetable } from "./fakes/timetable.js";
import { type Harness, mcpClient, parentBridge, textOf } from "./helpers.js";

type Struct = Record<string, unknown>;
const structured = (r: unknown) => (r as { structuredContent: Struct }).structuredContent;

/** A parent key with two children (Anna, Ben) and a portal whose tasks carry rich text. */
describe("every child at once", () => {
  let h: Harness;
  let fake: FakeTimetable;
  beforeAll(async () => {
    ({ h, fake } = await parentBridge("2026-11-23T07:00:00.000Z")); // Monday 08:00 in Berlin
  });
  afterAll(async () => {
    await h.close();
    await fake.stop();
  });

  it("get_schedule without student answers for both children, one block per child", async () => {
    const { client, close } = await mcpClient(`${h.url}/mcp`);
    const r = await client.callTool({ name: "get_schedule", arguments: { when: "today" } });
    const text = textOf(r);
    expect(text).toContain("Timetable for Anna, Mon 2026-11-23; 3 changed:");
    expect(text).toContain("Timetable for Ben, Mon 2026-11-23; 0 changed:");
    expect(text.indexOf("for Anna")).toBeLessThan(text.indexOf("for Ben"));
    const periods = structured(r).periods as Struct[];
    expect(new Set(periods.map((p) => p.student))).toEqual(new Set(["Anna", "Ben"]));
    expect(periods.filter((p) => p.student === "Ben")).toHaveLength(2);
    // One call per child, each as STUDENT with the child's id.
    const ids = fake.calls.filter((c) => c.method === "getTimetable2017").map((c) => c.params.id);
    expect(ids.sort()).toEqual([101, 102]);
    await close();
  });

  it('student: "all" reads every child even with TIMETABLE_STUDENT set; lists group per child', async () => {
    const { h: h2, fake: f2 } = await parentBridge("2026-11-23T07:00:00.000Z", { TIMETABLE_STUDENT: "Ben" });
    try {
      const { client, close } = await mcpClient(`${h2.url}/mcp`);
      const one = await client.callTool({ name: "list_homework", arguments: {} });
      expect(structured(one).student).toBe("Ben");
      const all = await client.callTool({ name: "list_homework", arguments: { student: "all" } });
      expect(structured(all)).toMatchObject({ student: "all", students: ["Anna", "Ben"] });
      const text = textOf(all);
      expect(text).toMatch(/Anna:\n- Tue 2026-11-24 homework Mathematics: Exercise 4 on page 37/);
      expect(text).toMatch(/Ben:\n- Tue 2026-11-24 homework English: Read chapter 2/);
      await close();
    } finally {
      await h2.close();
      await f2.stop();
    }
  });

  it("upcoming_deadlines: portal tasks plus every child's homework and exams in one call", async () => {
    const { client, close } = await mcpClient(`${h.url}/mcp`);
    const r = await client.callTool({ name: "upcoming_deadlines", arguments: { days: 4, limit: 100 } });
    expect(r.isError).toBeFalsy();
    const items = structured(r).items as Struct[];
    const kinds = (who: string | null, kind: string) =>
      items.filter((i) => (i.student ?? null) === who && i.kind === kind).map((i) => i.title);
    expect(kinds("Anna", "homework")).toEqual(["Exercise 4 on page 37"]);
    expect(kinds("Ben", "homework")).toEqual(["Read chapter 2"]);
    expect(kinds("Anna", "exam")).toEqual(["Klassenarbeit: Cells test"]);
    expect(kinds("Ben", "exam")).toEqual(["Klassenarbeit: Vocabulary"]);
    expect(kinds(null, "task").length).toBeGreaterThan(0);
    const text = textOf(r);
    expect(text).toContain("Portal:");
    expect(text).toContain("Anna:");
    expect(text).toContain("Ben:");
    expect(text).not.toContain("[object Object]");
    await close();
  });

  it("a child whose read fails is named; the other child's answer stands", async () => {
    const { client, close } = await mcpClient(`${h.url}/mcp`);
    fake.deniedChildren.add(102);
    try {
      const s = await client.callTool({ name: "get_changes", arguments: { days: 2 } });
      expect(s.isError).toBeFalsy();
      expect(structured(s).errors).toEqual([expect.stringMatching(/^Ben: .*-8509/)]);
      expect(textOf(s)).toContain("changes for Anna");
      expect(textOf(s)).toContain("these sources failed: Ben:");
      const d = await client.callTool({ name: "upcoming_deadlines", arguments: { days: 4 } });
      expect(d.isError).toBeFalsy();
      expect((structured(d).errors as string[]).some((e) => e.startsWith("Homework (Ben)"))).toBe(true);
      expect((structured(d).items as Struct[]).some((i) => i.student === "Anna")).toBe(true);
    } finally {
      fake.deniedChildren.clear();
      await close();
    }
  });
});
