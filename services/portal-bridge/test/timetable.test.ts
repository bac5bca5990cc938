import { FakeClock } from "@app/kit/clock";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTimetableClient, type TimetableClient, TimetableError } from "../src/upstream/timetable.js";
import { base32Decode, hotp, totp } from "../src/upstream/totp.js";
import { FakeTimetable, TT_SCHOOL, TT_SECRET, TT_USER, timetableEnv } from "./fakes/timetable.js";
import { type Harness, mcpClient, startHarness, textOf } from "./helpers.js";

describe("TOTP (RFC 6238)", () => {
  it("matches the RFC's SHA1 test vectors (8 digits)", () => {
    const key = Buffer.from("12345678901234567890", "ascii");
    expect(base32Decode("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ")).toEqual(key);
    const vectors: [number, string][] = [
      [59, "94287082"],
      [1_111_111_109, "07081804"],
      [1_111_111_111, "14050471"],
      [1_234_567_890, "89005924"],
      [2_000_000_000, "69279037"],
      [20_000_000_000, "65353130"],
    ];
    for (const [t, code] of vectors) expect(totp(key, t * 1000, { digits: 8 }), String(t)).toBe(code);
  });

  it("gives 6 digits by default and the RFC 4226 HOTP values", () => {
    const key = Buffer.from("12345678901234567890", "ascii");
    expect(["755224", "287082", "359152"]).toEqual([0, 1, 2].map((c) => hotp(key, c)));
    expect(totp(base32Decode("jbsw y3dp ehpk 3pxp"), 59_000)).toMatch(/^\d{6}$/);
  });
});

describe("timetable client", () => {
  const clock = new FakeClock("2026-11-23T07:00:00.000Z");
  const fake = new FakeTimetable(clock);
  let client: TimetableClient;
  beforeAll(async () => {
    await fake.start();
    client = createTimetableClient({
      origin: fake.url,
      school: TT_SCHOOL,
      user: TT_USER,
      secret: TT_SECRET,
      clientVersion: "i2.2",
      timeoutMs: 5000,
      clock,
    });
  });
  afterAll(async () => fake.stop());

  it("sends the mobile JSON-RPC shape with v=, school and a fresh TOTP per request", async () => {
    await client.call("getUserData2017");
    await clock.advance(30_000);
    await client.call("getUserData2017");
    const [a, b] = fake.calls.slice(-2);
    expect(a?.query).toEqual({ m: "getUserData2017", school: TT_SCHOOL, v: "i2.2" });
    const authA = a?.params.auth as { user: string; otp: string; clientTime: number };
    const authB = b?.params.auth as { otp: string; clientTime: number };
    expect(authA.user).toBe(TT_USER);
    expect(authA.clientTime).toBe(Date.parse("2026-11-23T07:00:00.000Z"));
    expect(authA.otp).toBe(totp(base32Decode(TT_SECRET), authA.clientTime));
    expect(authB.otp).not.toBe(authA.otp);
  });

  it("refuses any method outside the five-method allowlist before any network call", async () => {
    const n = fake.calls.length;
    for (const m of ["submitAbsences2017", "deleteAbsence2017", "getAuthToken", "getTimetable2017 "])
      await expect(client.call(m)).rejects.toMatchObject({ kind: "refused_method" });
    expect(fake.calls.length).toBe(n);
  });

  it("reports -8524 with the measured skew in seconds", async () => {
    fake.serverOffsetMs = -125_000; // the host clock is 125 s ahead
    const err = (await client.call("getUserData2017").catch((e) => e)) as TimetableError;
    expect(err).toBeInstanceOf(TimetableError);
    expect(err).toMatchObject({ kind: "invalid_client_time", code: -8524, skewS: 125 });
    expect(err.message).toMatch(/-8524 invalid client time.*125 s ahead/);
    fake.serverOffsetMs = 0;
  });

  it("maps the other error codes to clear messages", async () => {
    const cases: [number, RegExp][] = [
      [-8520, /authentication required/],
      [-8521, /authentication error/],
      [-8509, /no right/],
      [-7004, /invalid date/],
      [-42003, /maintenance/],
    ];
    for (const [code, re] of cases) {
      fake.nextError = code;
      const err = (await client.call("getExams2017").catch((e) => e)) as TimetableError;
      expect(err.code).toBe(code);
      expect(err.message).toMatch(re);
      expect(err.message).not.toContain(TT_SECRET);
    }
  });
});

describe("timetable tools", () => {
  let h: Harness;
  let fake: FakeTimetable;
  beforeAll(async () => {
    const clock = new FakeClock("2026-11-23T07:00:00.000Z"); // a Monday
    fake = new FakeTimetable(clock);
    await fake.start();
    h = await startHarness({
      clock,
      env: {
        ...timetableEnv(fake.url),
      },
    });
    await h.listen();
  });
  afterAll(async () => {
    await h.close();
    await fake.stop();
  });

  it("exist when TIMETABLE_* are set and flag cancellations, substitutions and room changes", async () => {
    const { client, close } = await mcpClient(`${h.url}/mcp`);
    const names = (await client.listTools()).tools.map((t) => t.name);
    for (const n of ["get_schedule", "list_homework", "list_exams", "get_messages_of_day"])
      expect(names).toContain(n);
    const r = await client.callTool({ name: "get_schedule", arguments: {} });
    const s = r.structuredContent as {
      start_date: string;
      student: unknown;
      periods: Record<string, unknown>[];
    };
    expect(s.start_date).toBe("2026-11-23");
    expect(s.student).toBeNull(); // a student account reads itself and is not named
    expect(s.periods.map((p) => [p.lesson, p.subject, p.cancelled, p.substitution, p.room_change])).toEqual([
      [1, "Mathematics", false, true, false],
      [2, "Biology", false, false, true],
      [3, "English", true, false, false],
      [4, "Mathematics", false, false, false],
    ]);
    expect(s.periods[0]).toMatchObject({
      date: "2026-11-23",
      weekday: "Monday",
      start: "08:00",
      end: "08:45",
      teachers: ["Jo Jones"],
      original_teachers: ["Sam Smith"],
      subject_code: "Ma",
    });
    expect(s.periods[1]).toMatchObject({
      rooms: ["Lab 202"],
      original_rooms: ["Room 101"],
      classes: ["Class 9b"],
    });
    const text = textOf(r);
    expect(text).toContain("Mon 2026-11-23:");
    expect(text).toContain("3. 09:50–10:35 English Room 101 Sam Smith [CANCELLED; Teacher ill]");
    expect(text).toContain("teacher Sam Smith → Jo Jones");
    expect(text).toContain("room Room 101 → Lab 202");
    await close();
  });

  it("lists homework and exams, merges deadlines and reads messages of the day", async () => {
    const { client, close } = await mcpClient(`${h.url}/mcp`);
    const hw = await client.callTool({ name: "list_homework", arguments: {} });
    expect(hw.structuredContent).toMatchObject({
      items: [
        {
          kind: "homework",
          title: "Exercise 4",
          subject: "Mathematics",
          date: "2026-11-25",
          weekday: "Wednesday",
          completed: false,
        },
      ],
    });
    expect(textOf(hw)).toContain("Wed 2026-11-25 homework Mathematics: Exercise 4");
    const ex = await client.callTool({ name: "list_exams", arguments: {} });
    expect(ex.structuredContent).toMatchObject({
      items: [
        {
          kind: "exam",
          title: "Klassenarbeit: Cells test",
          subject: "Biology",
          time: "08:00",
          end_time: "09:30",
        },
      ],
    });
    const dl = await client.callTool({ name: "upcoming_deadlines", arguments: { days: 3, limit: 5 } });
    const items = (dl.structuredContent as { items: { kind: string; date: string }[] }).items;
    expect(items.map((i) => [i.kind, i.date])).toEqual([
      ["task", "2026-11-23"],
      ["exam", "2026-11-24"],
      ["task", "2026-11-24"],
      ["homework", "2026-11-25"],
      ["task", "2026-11-25"],
    ]);
    expect((dl.structuredContent as { truncated: boolean }).truncated).toBe(true);
    const mod = await client.callTool({ name: "get_messages_of_day", arguments: {} });
    expect(mod.structuredContent).toMatchObject({
      date: "2026-11-23",
      messages: [
        { subject: "Snow", text: "School opens at 10 on 2026-11-23.", attachments: ["snow-plan.pdf"] },
      ],
    });
    expect(textOf(mod)).toContain("School opens at 10");
    const bad = await client.callTool({
      name: "list_exams",
      arguments: { from: "2026-12-01", to: "2026-11-01" },
    });
    expect(bad.isError).toBe(true);
    await close();
  });

  it("reports -8524 through the tools with the skew, and connection_status shows reachability", async () => {
    const { client, close } = await mcpClient(`${h.url}/mcp`);
    fake.serverOffsetMs = 90_000;
    const r = await client.callTool({ name: "get_messages_of_day", arguments: {} });
    expect(r.isError).toBe(true);
    expect(textOf(r)).toMatch(/-8524 invalid client time.*90 s behind/);
    const st = await client.callTool({ name: "connection_status", arguments: {} });
    expect((st.structuredContent as { timetable: unknown }).timetable).toMatchObject({
      configured: true,
      reachable: false,
    });
    fake.serverOffsetMs = 0;
    await close();
  });
});
