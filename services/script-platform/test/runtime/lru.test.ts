import { describe, expect, it } from "vitest";
import { Lru } from "../../src/sandbox/lru.js";

describe("Lru", () => {
  it("evicts the least recently used entry, counting reads of the newest key", () => {
    const lru = new Lru<string, number>(2);
    lru.set("a", 1);
    lru.set("b", 2);
    expect(lru.get("a")).toBe(1); // a is newest now: b goes first
    expect(lru.get("a")).toBe(1); // reading the newest again keeps the order
    lru.set("c", 3);
    expect(lru.get("b")).toBeUndefined();
    expect(lru.get("a")).toBe(1);
    expect(lru.get("c")).toBe(3);
    lru.set("d", 4); // c was read last: a goes
    expect(lru.get("a")).toBeUndefined();
    expect(lru.get("c")).toBe(3);
    expect(lru.get("d")).toBe(4);
    expect(lru.size).toBe(2);
  });

  it("a key set again after eviction is found, and an unknown key is not", () => {
    const lru = new Lru<string, number>(1);
    lru.set("a", 1);
    lru.set("b", 2);
    expect(lru.get("a")).toBeUndefined();
    lru.set("a", 3);
    expect(lru.get("a")).toBe(3);
    expect(lru.get("b")).toBeUndefined();
  });
});
