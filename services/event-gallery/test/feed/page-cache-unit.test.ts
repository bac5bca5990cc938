import { describe, expect, it } from "vitest";
import { FeedPageCache, PageTemplate } from "../../src/feed/page-cache.js";

/** The bounds and stamp rules of the per-process page and liked_by_me cache (no database needed). */
describe("FeedPageCache", () => {
  const page = () => PageTemplate.of([], null);

  it("keeps entries for the current stamp only: a newer stamp drops everything, an older one is not kept", () => {
    const cache = new FeedPageCache();
    const p = page();
    cache.set(5, "k", p);
    cache.setLiked(5, "ann", "k", new Set(["a"]));
    expect(cache.get(5, "k")).toBe(p);
    expect([...(cache.likedOf(5, "ann", "k") ?? [])]).toEqual(["a"]);
    expect(cache.likedOf(5, "bob", "k")).toBeUndefined();
    expect(cache.likedOf(5, "ann", "other")).toBeUndefined();
    // A request that read an older stamp is served from the database and changes nothing here.
    cache.setLiked(4, "bob", "k", new Set());
    expect(cache.likedOf(4, "bob", "k")).toBeUndefined();
    expect(cache.likedOf(5, "bob", "k")).toBeUndefined();
    expect(cache.get(4, "k")).toBeUndefined();
    // A newer stamp drops every page and liked set of the old one.
    cache.setLiked(6, "bob", "k", new Set(["b"]));
    expect(cache.get(5, "k")).toBeUndefined();
    expect(cache.get(6, "k")).toBeUndefined();
    expect(cache.likedOf(6, "ann", "k")).toBeUndefined();
    expect([...(cache.likedOf(6, "bob", "k") ?? [])]).toEqual(["b"]);
  });

  it("is bounded, dropping the least recently used liked set", () => {
    const cache = new FeedPageCache(2, 2);
    cache.setLiked(1, "a", "k", new Set(["1"]));
    cache.setLiked(1, "b", "k", new Set(["2"]));
    expect(cache.likedOf(1, "a", "k")).toBeDefined(); // a is now the most recent
    cache.setLiked(1, "c", "k", new Set(["3"]));
    expect(cache.likedOf(1, "b", "k")).toBeUndefined();
    expect(cache.likedOf(1, "a", "k")).toBeDefined();
    expect(cache.likedOf(1, "c", "k")).toBeDefined();
    for (const key of ["x", "y", "z"]) cache.set(1, key, page());
    expect(cache.get(1, "x")).toBeUndefined();
    expect(cache.get(1, "y")).toBeDefined();
    expect(cache.get(1, "z")).toBeDefined();
  });

  it("makes the delta cursor once per millisecond", () => {
    const cache = new FeedPageCache();
    const made: number[] = [];
    const make = (ms: number) => {
      made.push(ms);
      return `c${ms}`;
    };
    expect(cache.deltaCursor(1000, make)).toBe("c1000");
    expect(cache.deltaCursor(1000, make)).toBe("c1000");
    expect(cache.deltaCursor(1001, make)).toBe("c1001");
    expect(made).toEqual([1000, 1001]);
  });
});
