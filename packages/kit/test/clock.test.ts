import { describe, expect, it } from "vitest";
import { FakeClock, toIso } from "../src/clock.js";

describe("FakeClock", () => {
  it("fires timers in time order and only when due", async () => {
    const clock = new FakeClock("2026-01-01T00:00:00.000Z");
    const seen: string[] = [];
    clock.setTimeout(() => seen.push("b@200"), 200);
    clock.setTimeout(() => seen.push("a@100"), 100);
    const iv = clock.setInterval(
      () => seen.push(`tick@${clock.now() - Date.parse("2026-01-01T00:00:00.000Z")}`),
      150,
    );
    await clock.advance(99);
    expect(seen).toEqual([]);
    await clock.advance(201);
    expect(seen).toEqual(["a@100", "tick@150", "b@200", "tick@300"]);
    iv.cancel();
    await clock.advance(1000);
    expect(seen).toHaveLength(4);
    expect(clock.iso()).toBe("2026-01-01T00:00:01.300Z");
  });

  it("resumes code awaiting sleep, including chains of awaits", async () => {
    const clock = new FakeClock();
    const order: number[] = [];
    const run = (async () => {
      await clock.sleep(1000);
      order.push(1);
      await clock.sleep(1000);
      order.push(2);
    })();
    await clock.advance(1500);
    expect(order).toEqual([1]);
    await clock.advance(500);
    await run;
    expect(order).toEqual([1, 2]);
    expect(clock.pending()).toBe(0);
  });

  it("rejects a sleep when its signal aborts", async () => {
    const clock = new FakeClock();
    const ac = new AbortController();
    const p = clock.sleep(10_000, ac.signal);
    ac.abort(new Error("stop"));
    await expect(p).rejects.toThrow("stop");
    expect(clock.pending()).toBe(0);
  });
});

describe("toIso", () => {
  it("gives toISOString's text for any millisecond, also alternating between two seconds", () => {
    const at = Date.parse("2026-11-28T18:59:59.990Z");
    for (let i = 0; i < 2000; i++) {
      // now and a deadline 330 s later, as a request writes them, across second boundaries
      for (const ms of [at + i, at + i + 330_000, Math.floor(Math.random() * 4e12)])
        expect(toIso(ms)).toBe(new Date(ms).toISOString());
    }
    expect(toIso(253402300800000)).toBe(new Date(253402300800000).toISOString());
    expect(toIso(-1)).toBe(new Date(-1).toISOString());
    expect(() => toIso(Number.NaN)).toThrow(RangeError);
  });
});
