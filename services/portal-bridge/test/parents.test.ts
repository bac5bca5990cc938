import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeTimetable } from "./fakes/timetable.js";
import { type Harness, mcpClient, parentBridge, textOf } from "./helpers.js";

type Struct = Record<string, unknown>;
const structured = (r: unknown) => (r as { structuredContent: Struct }).structuredContent;

describe("a parent account asks its questions through the official SDK client", () => {
  let h: Harness;
  let fake: FakeTimetable;
  beforeAll(async () => {
    // Monday 2026-11-23, 08:00 in Berlin.
    ({ h, fake } = await parentBridge("2026-11-23T07:00:00.000Z"));
    // A portal task due 23:00 Berlin time on Tuesday (22:00 UTC).
    h.portal.data.tasks.unshift({
      id: "late01",
      name: "Upload the lab report",
      courseName: "Biology",
      dueDate: "2026-11-24T22:00:00.000Z",
      description: "<p>PDF, <b>two pages</b> at most.</p>",
      status: { submitted: 0, graded: 0, isDraft: false },
    } as never);
  });
  afterAll(async () => {
    await h.close();
    await fake.stop();
  });

  it("get_profile lists the children; a timetable tool without student names them in its error", async () => {
    const { client, close } = await mcpClient(`${h.url}/mcp`);
    const p = await client.callTool({ name: "get_profile", arguments: {} });
    expect(structured(p).children).toEqual([
      { id: 101, first_name: "Anna", last_name: "Hopper" },
      { id: 102, first_name: "Ben", last_name: "Hopper" },
    ]);
    expect(textOf(p)).toContain("Children: Anna Hopper (id 101), Ben Hopper (id 102)");
    // With several children and none named, every timetable tool answers for all of them.
    for (const name of ["get_schedule", "get_changes", "list_homework", "list_exams", "upcoming_deadlines"]) {
      const r = await client.callTool({ name, arguments: {} });
      expect(r.isError, name).toBeFalsy();
      expect(structured(r).student, name).toBe("all");
      expect(structured(r).students, name).toEqual(["Anna", "Ben"]);
    }
    const unknown = await client.callTool({ name: "get_schedule", arguments: { student: "Carla" } });
    expect(unknown.isError).toBe(true);
    expect(textOf(unknown)).toContain('No child matches "Carla"');
    await close();
  });

  it("answers the four parent questions right, for the child named (by first name or id)", async () => {
    const { client, close } = await mcpClient(`${h.url}/mcp`);
    fake.calls.length = 0;

    // 1. "What homework is due tomorrow?"
    const hw = await client.callTool({
      name: "list_homework",
      arguments: { from: "2026-11-24", to: "2026-11-24", student: "anna" },
    });
    expect(structured(hw)).toMatchObject({
      student: "Anna",
      items: [
        { title: "Exercise 4 on page 37", subject: "Mathematics", date: "2026-11-24", completed: false },
      ],
    });
    expect(textOf(hw)).toContain("Tue 2026-11-24 homework Mathematics: Exercise 4 on page 37");
    const ben = await client.callTool({
      name: "list_homework",
      arguments: { from: "2026-11-24", to: "2026-11-24", student: "102" },
    });
    expect(structured(ben)).toMatchObject({
      student: "Ben",
      items: [{ title: "Read chapter 2", subject: "English" }],
    });
    // Each child is read as type STUDENT with the child's id.
    const hwCalls = fake.calls
      .filter((c) => c.method === "getHomeWork2017")
      .map((c) => [c.params.type, c.params.id]);
    expect(hwCalls).toEqual([
      ["STUDENT", 101],
      ["STUDENT", 102],
    ]);
    const due = await client.callTool({
      name: "upcoming_deadlines",
      arguments: { days: 1, student: "Anna" },
    });
    const dueText = textOf(due);
    expect(dueText).toContain("homework Mathematics: Exercise 4 on page 37");
    // A portal time is shown in school time: 22:00 UTC is 23:00 in Berlin.
    expect(dueText).toContain(
      "Tue 2026-11-24 23:00 task Biology: Upload the lab report (PDF, two pages at most.)",
    );

    // 2. "Was the 3rd lesson cancelled?"
    const today = await client.callTool({
      name: "get_schedule",
      arguments: { when: "today", student: "Anna" },
    });
    const third = (structured(today).periods as Struct[]).find((p) => p.lesson === 3);
    expect(third).toMatchObject({ subject: "English", cancelled: true, info: "Teacher ill", start: "09:50" });
    expect(textOf(today)).toContain("3. 09:50–10:35 English Room 101 Sam Smith [CANCELLED; Teacher ill]");
    const benToday = await client.callTool({
      name: "get_schedule",
      arguments: { when: "today", student: "Ben" },
    });
    expect((structured(benToday).periods as Struct[]).some((p) => p.cancelled)).toBe(false);

    // 3. "Any news from school?" — portal news with their text, and the messages of the day.
    const news = await client.callTool({ name: "list_news", arguments: {} });
    expect(textOf(news)).toContain("Sports day (Fri 2026-11-20 09:00");
    expect(textOf(news)).toContain("Sports day is on Friday.");

    // 4. Messages of the day (read from result.messages).
    const mod = await client.callTool({ name: "get_messages_of_day", arguments: {} });
    expect(textOf(mod)).toContain("1 message of the day for Mon 2026-11-23");
    expect(textOf(mod)).toContain("## Snow\nSchool opens at 10 on 2026-11-23.");
    expect(textOf(mod)).toContain("Attachments: snow-plan.pdf");
    await close();
  });

  it("get_changes lists what changed, from → to; a week's schedule stays under 4 KB", async () => {
    const { client, close } = await mcpClient(`${h.url}/mcp`);
    const ch = await client.callTool({ name: "get_changes", arguments: { days: 2, student: "Anna" } });
    const text = textOf(ch);
    expect(text).toContain("6 changes for Anna, Mon 2026-11-23 to Tue 2026-11-24:");
    expect(text).toContain(
      "Mon 2026-11-23 lesson 1 (08:00–08:45) Mathematics: teacher Sam Smith → Jo Jones; Vertretung",
    );
    expect(text).toContain("Mon 2026-11-23 lesson 2 (08:50–09:35) Biology: room Room 101 → Lab 202");
    expect(text).toContain("Tue 2026-11-24 lesson 3 (09:50–10:35) English: CANCELLED; Teacher ill");
    const week = await client.callTool({
      name: "get_schedule",
      arguments: { when: "week", student: "Anna" },
    });
    expect(structured(week)).toMatchObject({ start_date: "2026-11-23", end_date: "2026-11-27" });
    expect((structured(week).periods as unknown[]).length).toBe(20);
    expect(Buffer.byteLength(textOf(week))).toBeLessThan(4096);
    expect(textOf(week)).toContain("Fri 2026-11-27:");
    await close();
  });

  it("upcoming_deadlines names the sources that failed, and is a tool error when all did", async () => {
    const { client, close } = await mcpClient(`${h.url}/mcp`);
    fake.failMethods.add("getExams2017");
    const partial = await client.callTool({
      name: "upcoming_deadlines",
      arguments: { days: 3, student: "Anna" },
    });
    expect(partial.isError).toBeFalsy();
    expect(structured(partial).errors).toEqual([
      "Exams (Anna): Timetable error -42003: the timetable service is in maintenance; try again later.",
    ]);
    expect(textOf(partial)).toContain("these sources failed: Exams (Anna):");
    fake.failMethods.add("getHomeWork2017");
    h.portal.failNext = { count: 1, status: 503 };
    const none = await client.callTool({
      name: "upcoming_deadlines",
      arguments: { days: 3, student: "Anna" },
    });
    expect(none.isError).toBe(true);
    expect(textOf(none)).toMatch(
      /^Every deadline source failed.*Portal tasks: .*Homework \(Anna\): .*Exams \(Anna\): /,
    );
    fake.failMethods.clear();
    await close();
  });
});

describe("parent presets, school time and size caps", () => {
  it("TIMETABLE_STUDENT picks the child when none is named", async () => {
    const { h, fake } = await parentBridge("2026-11-23T07:00:00.000Z", { TIMETABLE_STUDENT: "Ben" });
    try {
      const { client, close } = await mcpClient(`${h.url}/mcp`);
      const r = await client.callTool({ name: "get_schedule", arguments: {} });
      expect(structured(r).student).toBe("Ben");
      expect(fake.calls.filter((c) => c.method === "getTimetable2017").map((c) => c.params.id)).toEqual([
        102,
      ]);
      await close();
    } finally {
      await h.close();
      await fake.stop();
    }
  });

  it("today and tomorrow follow SCHOOL_TIMEZONE after local midnight", async () => {
    // 23:30 UTC on Monday is 00:30 on Tuesday in Berlin, still Monday in New York.
    const { h, fake } = await parentBridge("2026-11-23T23:30:00.000Z", { TIMETABLE_STUDENT: "Anna" });
    try {
      const { client, close } = await mcpClient(`${h.url}/mcp`);
      const today = await client.callTool({ name: "get_schedule", arguments: { when: "today" } });
      expect(structured(today)).toMatchObject({ start_date: "2026-11-24", end_date: "2026-11-24" });
      expect(textOf(today)).toContain("Tue 2026-11-24:");
      const tomorrow = await client.callTool({ name: "get_schedule", arguments: { when: "tomorrow" } });
      expect(structured(tomorrow)).toMatchObject({ start_date: "2026-11-25" });
      const mod = await client.callTool({ name: "get_messages_of_day", arguments: {} });
      expect(structured(mod)).toMatchObject({ date: "2026-11-24" });
      expect(fake.calls.at(-1)?.params.date).toBe("2026-11-24");
      await close();
    } finally {
      await h.close();
      await fake.stop();
    }
    const ny = await parentBridge("2026-11-23T23:30:00.000Z", {
      TIMETABLE_STUDENT: "Anna",
      SCHOOL_TIMEZONE: "America/New_York",
    });
    try {
      const { client, close } = await mcpClient(`${ny.h.url}/mcp`);
      const today = await client.callTool({ name: "get_schedule", arguments: { when: "today" } });
      expect(structured(today)).toMatchObject({ start_date: "2026-11-23" });
      await close();
    } finally {
      await ny.h.close();
      await ny.fake.stop();
    }
  });

  it("an oversized timetable answer is a clear tool error (UPSTREAM_MAX_BYTES)", async () => {
    const { h, fake } = await parentBridge("2026-11-23T07:00:00.000Z", {
      TIMETABLE_STUDENT: "Anna",
      UPSTREAM_MAX_BYTES: "65536",
    });
    try {
      fake.timetablePadBytes = 200_000;
      const { client, close } = await mcpClient(`${h.url}/mcp`);
      const r = await client.callTool({ name: "get_schedule", arguments: { when: "today" } });
      expect(r.isError).toBe(true);
      expect(textOf(r)).toContain(
        "The timetable answer is larger than the bridge reads (UPSTREAM_MAX_BYTES, 64 KiB)",
      );
      fake.timetablePadBytes = 0;
      const ok = await client.callTool({ name: "get_schedule", arguments: { when: "today" } });
      expect(ok.isError).toBeFalsy();
      // The portal is capped by the same variable.
      h.portal.data.news[0] = { ...h.portal.data.news[0], content: "y".repeat(100_000) } as never;
      const big = await client.callTool({ name: "list_news", arguments: {} });
      expect(big.isError).toBe(true);
      expect(textOf(big)).toContain("larger than the bridge reads (UPSTREAM_MAX_BYTES)");
      await close();
    } finally {
      await h.close();
      await fake.stop();
    }
  });
});
