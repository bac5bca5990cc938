import { describe, expect, it } from "vitest";
import { isUuid, newId } from "../src/ids.js";

describe("newId", () => {
  it("makes distinct version-7 UUIDs that sort in creation order, also within one millisecond", () => {
    const ids = Array.from({ length: 5000 }, () => newId());
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) {
      expect(isUuid(id)).toBe(true);
      expect(id[14]).toBe("7");
      expect("89ab").toContain(id[19]);
    }
    // 5,000 ids take a few milliseconds, so many share one: the counter must keep them ordered.
    expect([...ids].sort()).toEqual(ids);
  });

  it("carries the creation time in its first 48 bits", () => {
    const before = Date.now();
    const id = newId();
    const after = Date.now();
    const ms = Number.parseInt(id.replace(/-/g, "").slice(0, 12), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    // The counter may carry a burst a few milliseconds ahead of the clock, never behind it.
    expect(ms).toBeLessThanOrEqual(after + 5);
  });

  it("uses fresh randomness across pool refills (no repeated random tails)", () => {
    const tails = new Set(Array.from({ length: 2000 }, () => newId().slice(-12)));
    expect(tails.size).toBe(2000);
  });
});
