import type { FakeClock } from "@app/kit/clock";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeTimetable } from "./fakes/timetable.js";
import { type Harness, mcpClient, parentBridge, textOf } from "./helpers.js";

type Struct = Record<string, unknown>;
const structured = (r: unknown) => (r as { structuredContent: Struct }).structuredContent;

describe("get_school_calendar", () => {
  let h: Harness;
  let fake: FakeTimetable;
  let clock: FakeClock;
  beforeAll(async () => {
    // Monday 08:10 in Berlin
    ({ h, fake, clock } = await parentBridge("2026-11-23T07:10:00.000Z", { KEEPALIVE_INTERVAL_MS: "0" }));
  });
  afterAll(async () => {
    await h.close();
    await fake.stop();
  });

  it("answers the next holidays, when the 5th lesson ends, and the current lesson", async () => {
    const { client, close } = await mcpClient(`${h.url}/mcp`);
    const r = await client.callTool({ name: "get_school_calendar", arguments: {} });
    expect(r.isError).toBeFalsy();
    const s = structured(r);
    expect(s.holidays).toEqual([
      { name: "Beweglicher Ferientag", first_day: "2026-12-07", last_day: "2026-12-07" },
      { name: "Weihnachtsferien", first_day: "2026-12-21", last_day: "2027-01-01" },
      { name: "Winterferien", first_day: "2027-02-01", last_day: "2027-02-06" },
    ]);
    const grid = s.time_grid as { weekday: string; periods: { lesson: number; end: string }[] }[];
    expect(grid.find((g) => g.weekday === "Monday")?.periods.find((p) => p.lesson === 5)?.end).toBe("12:25");
    expect(grid.find((g) => g.weekday === "Friday")?.periods).toHaveLength(5);
    expect(s.school_day).toMatchObject({ date: "2026-11-23", is_today: true });
    expect(s.current_lesson).toEqual({ lesson: 1, start: "08:00", end: "08:45" });
    expect(s.next_lesson).toEqual({ lesson: 2, start: "08:50", end: "09:35" });
    const text = textOf(r);
    expect(text).toContain(
      "Today, Mon 2026-11-23, is a school day; now lesson 1 (08:00–08:45); next lesson 2 at 08:50.",
    );
    expect(text).toContain("- Weihnachtsferien: Mon 2026-12-21 to Fri 2027-01-01");
    expect(text).toContain(
      "- Mon-Thu: 1. 08:00–08:45, 2. 08:50–09:35, 3. 09:50–10:35, 4. 10:40–11:25, 5. 11:40–12:25, 6. 12:30–13:15",
    );
    expect(text).toContain("- Fri: 1. 08:00–08:45");
    // Only the allowlisted master-data read was sent.
    expect(new Set(fake.calls.map((c) => c.method))).toEqual(new Set(["getUserData2017"]));
    await close();
  });

  it("after the last lesson before the holidays, the next school day comes after them", async () => {
    clock.set("2026-12-18T14:00:00.000Z"); // Friday 15:00, the last school day before Christmas
    const { client, close } = await mcpClient(`${h.url}/mcp`);
    const r = await client.callTool({ name: "get_school_calendar", arguments: {} });
    expect(structured(r).school_day).toMatchObject({ date: "2027-01-04", is_today: false });
    expect(textOf(r)).toContain("Next school day: Mon 2027-01-04, first lesson at 08:00.");
    clock.set("2026-12-23T09:00:00.000Z");
    const during = await client.callTool({ name: "get_school_calendar", arguments: {} });
    expect(textOf(during)).toContain("Holiday now: Weihnachtsferien until Fri 2027-01-01.");
    const unknown = await client.callTool({ name: "get_school_calendar", arguments: { student: "Carla" } });
    expect(unknown.isError).toBe(true);
    await close();
  });
});
