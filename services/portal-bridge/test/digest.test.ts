import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeClock } from "@app/kit/clock";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nextDigestAt, parseDigestSchedule } from "../src/digest/schedule.js";
import { FakeTimetable, timetableEnv } from "./fakes/timetable.js";
import { WebhookReceiver } from "./fakes/webhook.js";
import { type Harness, mcpClient, startHarness, textOf } from "./helpers.js";

/** The digests a JSON webhook received. */
const digestsOf = (hook: WebhookReceiver) =>
  hook.json<{ event: string; title: string; text: string }>().filter((g) => g.event === "digest");

describe("DIGEST_SCHEDULE", () => {
  it("parses weekday ranges (wrapping too) and finds the next local time across DST", () => {
    const t = parseDigestSchedule("Mon-Fri 06:45, Sun-Thu 18:00");
    expect([...(t[0]?.days ?? [])]).toEqual([1, 2, 3, 4, 5]);
    expect([...(t[1]?.days ?? [])]).toEqual([0, 1, 2, 3, 4]);
    expect([...(parseDigestSchedule("Fri-Mon 07:00")[0]?.days ?? [])]).toEqual([5, 6, 0, 1]);
    for (const bad of ["6:45pm", "Mon-Fry 06:45", "25:00", "", "Mon-Fri"])
      expect(() => parseDigestSchedule(bad), bad).toThrow();
    const zone = "Europe/Berlin";
    // Friday 19:00 in Berlin (winter): the next is Sunday 18:00.
    expect(new Date(nextDigestAt(t, Date.parse("2026-11-27T18:00:00Z"), zone)).toISOString()).toBe(
      "2026-11-29T17:00:00.000Z",
    );
    // Saturday before the spring change: Sunday 18:00 is summer time (UTC+2).
    expect(new Date(nextDigestAt(t, Date.parse("2027-03-27T12:00:00Z"), zone)).toISOString()).toBe(
      "2027-03-28T16:00:00.000Z",
    );
    // Exactly at a scheduled time: the next one, not the same.
    expect(new Date(nextDigestAt(t, Date.parse("2026-11-23T05:45:00Z"), zone)).toISOString()).toBe(
      "2026-11-23T17:00:00.000Z",
    );
  });
});

describe("the digest across days, a restart and an upstream failure", () => {
  const hook = new WebhookReceiver();
  let stateDir: string;
  let fake: FakeTimetable;
  let clock: FakeClock;
  let h: Harness;
  const bridge = async () =>
    startHarness({
      clock,
      env: {
        ...timetableEnv(fake.url),
        STATE_DIR: stateDir,
        ALERT_WEBHOOK_URL: hook.url,
        DIGEST_SCHEDULE: "Mon-Fri 06:45,Sun-Thu 18:00",
      },
    });
  /** Moves the clock to `iso` (firing the digest due then) and waits for the digest to finish. */
  const at = async (iso: string) => {
    await clock.advance(Date.parse(iso) - clock.now());
    await h.built.digest.settled();
    await h.built.alerts?.settled();
  };

  beforeAll(async () => {
    await hook.start();
    stateDir = await mkdtemp(join(tmpdir(), "bridge-digest-"));
    clock = new FakeClock("2026-11-22T16:00:00.000Z"); // Sunday 17:00 in Berlin
    fake = new FakeTimetable(clock);
    fake.account = "parent";
    await fake.start();
    h = await bridge();
  });
  afterAll(async () => {
    await h.close();
    await fake.stop();
    await hook.stop();
    await rm(stateDir, { recursive: true, force: true });
  });

  it("Sunday 18:00 announces Monday's cancellation, what is due Monday, new exams and news", async () => {
    h.portal.data.news.unshift({
      id: "news2",
      title: "Parents' evening",
      content: "<p>On <b>Thursday</b> at 19:00.</p>",
      displayAt: "2026-11-22T14:00:00.000Z",
    });
    await at("2026-11-22T17:00:00.000Z");
    const d = digestsOf(hook);
    expect(d).toHaveLength(1);
    const text = d[0]?.text ?? "";
    expect(d[0]?.title).toBe("School digest Sun 2026-11-22 18:00");
    expect(text).toContain(
      "Timetable changes:\n- Anna: Mon 2026-11-23 lesson 1 (08:00–08:45) Mathematics: teacher Sam Smith → Jo Jones; Vertretung",
    );
    expect(text).toContain("- Anna: Mon 2026-11-23 lesson 3 (09:50–10:35) English: CANCELLED; Teacher ill");
    expect(text).not.toContain("Ben: Mon 2026-11-23 lesson");
    expect(text).toContain(
      "Due by Mon 2026-11-23:\n- task Maths: Task 1, due Mon 2026-11-23 09:00 (Plain notes for task 1)",
    );
    expect(text).toContain(
      "New exams:\n- Anna: Wed 2026-11-25 08:00 Biology: Klassenarbeit: Cells test (topic:",
    );
    expect(text).toContain("- Ben: Fri 2026-11-27 08:00 English: Klassenarbeit: Vocabulary");
    expect(text).toContain("New portal news:\n- Parents' evening: On Thursday at 19:00.");
    // Older news the bridge sees for the first time is not "new".
    expect(text).not.toContain("Sports day");
    expect(text).not.toContain("Could not check");
    // The record: only hashes and times, mode 0600.
    const file = join(stateDir, "seen.json");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const saved = await readFile(file, "utf8");
    expect(saved).not.toContain("Anna");
    expect(JSON.parse(saved).last_digest_at).toBe("2026-11-22T17:00:00.000Z");
  });

  it("Monday 06:45 tells only what is new: Tuesday's changes, homework due Tuesday, today's message", async () => {
    await at("2026-11-23T05:45:00.000Z");
    const d = digestsOf(hook);
    expect(d).toHaveLength(2);
    const text = d[1]?.text ?? "";
    expect(text).toContain("- Anna: Tue 2026-11-24 lesson 3 (09:50–10:35) English: CANCELLED; Teacher ill");
    expect(text).not.toContain("Mon 2026-11-23 lesson 3");
    expect(text).toContain("Due by Tue 2026-11-24:");
    expect(text).toContain("- Anna: homework Mathematics: Exercise 4 on page 37 (due Tue 2026-11-24)");
    expect(text).toContain("- Ben: homework English: Read chapter 2 (due Tue 2026-11-24)");
    expect(text).toContain("Messages of the day:\n- Snow: School opens at 10 on 2026-11-23.");
    expect(text).not.toContain("New exams");
    expect(text).not.toContain("Parents' evening");
  });

  it("nothing new: no message", async () => {
    await h.built.digest.run();
    expect(digestsOf(hook)).toHaveLength(2);
  });

  it("after a restart the record holds: whats_new and the next digest repeat nothing", async () => {
    await h.close();
    h = await bridge();
    await at("2026-11-23T09:00:00.000Z");
    const { client, close } = await mcpClient(`${h.url || (await h.listen())}/mcp`);
    const r = await client.callTool({ name: "whats_new", arguments: {} });
    expect(r.structuredContent).toMatchObject({ since: "2026-11-23T05:45:00.000Z", items: [], errors: [] });
    expect(textOf(r)).toBe("Nothing new since Mon 2026-11-23 06:45 (Europe/Berlin).");
    // An explicit since answers from the record: everything first seen after Sunday noon.
    const all = await client.callTool({ name: "whats_new", arguments: { since: "2026-11-22T12:00:00Z" } });
    expect(textOf(all)).toContain("Mon 2026-11-23 lesson 3 (09:50–10:35) English: CANCELLED");
    expect(textOf(all)).toContain("Tue 2026-11-24 lesson 3");
    await close();
    // Monday 18:00: today's and Tuesday's news were all told at 06:45, so no message.
    await at("2026-11-23T17:00:00.000Z");
    expect(digestsOf(hook)).toHaveLength(2);
  });

  it("after an upstream failure the digest says which source failed, and catches up once it answers", async () => {
    fake.failMethods.add("getTimetable2017");
    await at("2026-11-24T05:45:00.000Z");
    const failed = digestsOf(hook)[2]?.text ?? "";
    expect(failed).toContain(
      "Could not check: Timetable (Anna): Timetable error -42003: the timetable service is in maintenance; try again later.; Timetable (Ben): ",
    );
    expect(failed).toContain("Messages of the day:\n- Snow: School opens at 10 on 2026-11-24.");
    expect(failed).not.toContain("Timetable changes");
    fake.failMethods.clear();
    await at("2026-11-24T17:00:00.000Z");
    const after = digestsOf(hook)[3]?.text ?? "";
    expect(after).toContain("- Anna: Wed 2026-11-25 lesson 3 (09:50–10:35) English: CANCELLED");
    expect(after).not.toContain("Tue 2026-11-24 lesson");
    expect(after).not.toContain("Could not check");
    // Only allowlisted reads went out; the portal saw GETs only (plus the keep-alive's POST).
    expect(new Set(fake.calls.map((c) => c.method))).toEqual(
      new Set([
        "getUserData2017",
        "getTimetable2017",
        "getHomeWork2017",
        "getExams2017",
        "getMessagesOfDay2017",
      ]),
    );
    expect(
      h.portal.requests.filter(
        (r) => r.method !== "GET" && r.path !== "/api/v3/authentication/refresh-session",
      ),
    ).toEqual([]);
  });
});
