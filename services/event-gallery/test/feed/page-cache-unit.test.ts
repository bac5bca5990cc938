import { describe, expect, it } from "vitest";
import { SocialCounts, ViewerMasks } from "../../src/feed/overlay.js";
import { PerMillisecond, StampedCache } from "../../src/feed/page-cache.js";

/** The stamp rules and bounds of the per-process template and overlay caches (no database needed). */
describe("StampedCache", () => {
  const put = <V>(c: StampedCache<V>, s: { feed: number; social: number }, key: string, v: V) =>
    c.store(c.lookup(s, key).gen, key, v);

  it("keeps pages for the newest feed stamp, whatever the social stamp does", () => {
    const pages = new StampedCache<string>(false);
    put(pages, { feed: 5, social: 1 }, "k", "p5");
    expect(pages.lookup({ feed: 5, social: 9 }, "k").hit).toBe("p5");
    // A request that read an older stamp is served what is kept (newer than it needs).
    expect(pages.lookup({ feed: 4, social: 1 }, "k").hit).toBe("p5");
    put(pages, { feed: 6, social: 1 }, "other", "o6");
    expect(pages.lookup({ feed: 6, social: 1 }, "k").hit).toBeUndefined();
  });

  it("does not keep what was made while the stamps moved on", () => {
    const deltas = new StampedCache<string>(true);
    const { gen } = deltas.lookup({ feed: 5, social: 5 }, "k");
    // Meanwhile a request brings a newer social stamp: the value made under the old one is dropped.
    expect(deltas.lookup({ feed: 5, social: 6 }, "k").hit).toBeUndefined();
    deltas.store(gen, "k", "old");
    expect(deltas.lookup({ feed: 5, social: 6 }, "k").hit).toBeUndefined();
    // An unordered pair (cannot come from one statement) is neither served nor stored.
    put(deltas, { feed: 5, social: 6 }, "k", "new");
    expect(deltas.lookup({ feed: 6, social: 4 }, "k")).toEqual({ hit: undefined, gen: -1 });
    expect(deltas.lookup({ feed: 5, social: 6 }, "k").hit).toBe("new");
  });

  it("makes a missing value once for the requests that miss it together, and keeps it", async () => {
    const deltas = new StampedCache<string>(true);
    let made = 0;
    let release = (_v: string) => {};
    const make = () =>
      new Promise<string>((r) => {
        made++;
        release = r;
      });
    const s = { feed: 1, social: 1 };
    const a = deltas.get(s, "k", make);
    const b = deltas.get({ feed: 1, social: 0 }, "k", make);
    release("v");
    expect([await a, await b]).toEqual(["v", "v"]);
    expect(made).toBe(1);
    expect(await deltas.get(s, "k", make)).toBe("v");
    // A newer pair starts over.
    const c = deltas.get({ feed: 1, social: 2 }, "k", make);
    release("w");
    expect(await c).toBe("w");
    expect(made).toBe(2);
  });

  it("is bounded, dropping the least recently stored", () => {
    const pages = new StampedCache<string>(false, 2);
    for (const key of ["x", "y", "z"]) put(pages, { feed: 1, social: 1 }, key, key);
    expect(pages.lookup({ feed: 1, social: 1 }, "x").hit).toBeUndefined();
    expect(pages.lookup({ feed: 1, social: 1 }, "z").hit).toBe("z");
  });
});

describe("SocialCounts", () => {
  it("reads only what it does not hold for the current pair, once for concurrent requests", async () => {
    const reads: string[][] = [];
    let value = 1;
    const counts = new SocialCounts(async (ids) => {
      reads.push([...ids]);
      return new Map(ids.map((id) => [id, [value, 0]]));
    });
    const s = { feed: 1, social: 1 };
    const [a, b] = await Promise.all([counts.of(s, ["a", "b"]), counts.of(s, ["a", "b", "c"])]);
    expect(reads).toEqual([["a", "b"], ["c"]]);
    expect(a.get("a")).toEqual([1, 0]);
    expect(b.get("c")).toEqual([1, 0]);
    expect((await counts.of(s, ["a", "c"])).get("a")).toEqual([1, 0]);
    expect(reads).toHaveLength(2);
    // A like elsewhere: the next pair re-reads.
    value = 2;
    expect((await counts.of({ feed: 1, social: 2 }, ["a"])).get("a")).toEqual([2, 0]);
    // An older pair is served what is kept for the newer one.
    value = 3;
    expect((await counts.of(s, ["a"])).get("a")).toEqual([2, 0]);
    // Counts seeded with a page under the current pair are used as they are.
    counts.seed({ feed: 1, social: 2 }, [["z", [7, 1]]]);
    expect((await counts.of({ feed: 1, social: 2 }, ["z"])).get("z")).toEqual([7, 1]);
    expect(reads.flat().includes("z")).toBe(false);
  });

  it("a failed read fails its requests and is not kept", async () => {
    let fail = true;
    const counts = new SocialCounts(async (ids) => {
      if (fail) throw new Error("down");
      return new Map(ids.map((id) => [id, [1, 1]]));
    });
    await expect(counts.of({ feed: 1, social: 1 }, ["a"])).rejects.toThrow("down");
    fail = false;
    expect((await counts.of({ feed: 1, social: 1 }, ["a"])).get("a")).toEqual([1, 1]);
  });
});

describe("ViewerMasks", () => {
  it("keeps a viewer's fields while their revision stands, apart from other viewers", async () => {
    const likes = new Map<string, Set<string>>([["ann", new Set(["a"])]]);
    const reads: string[] = [];
    const masks = new ViewerMasks([
      async (viewer, ids) => {
        reads.push(viewer);
        return new Set(ids.filter((id) => likes.get(viewer)?.has(id)));
      },
    ]);
    expect(Object.fromEntries(await masks.of("ann", 1, ["a", "b"]))).toEqual({ a: 1, b: 0 });
    expect(Object.fromEntries(await masks.of("bob", 1, ["a", "b"]))).toEqual({ a: 0, b: 0 });
    likes.set("ann", new Set(["b"]));
    // Same revision: kept (every real like bumps it).
    expect(Object.fromEntries(await masks.of("ann", 1, ["a", "b"]))).toEqual({ a: 1, b: 0 });
    expect(reads).toEqual(["ann", "bob"]);
    expect(Object.fromEntries(await masks.of("ann", 2, ["a", "b"]))).toEqual({ a: 0, b: 1 });
    // No revision known: always read.
    await masks.of("ann", undefined, ["a"]);
    expect(reads).toEqual(["ann", "bob", "ann", "ann"]);
  });

  it("is bounded by viewers, least recently used first", async () => {
    let reads = 0;
    const counting = new ViewerMasks(
      [
        async () => {
          reads++;
          return new Set<string>();
        },
      ],
      2,
    );
    for (const v of ["a", "b", "a", "c", "a", "b"]) await counting.of(v, 1, ["x"]);
    // a, b read; a kept; c evicts b; a kept; b read again.
    expect(reads).toBe(4);
  });
});

describe("PerMillisecond", () => {
  it("makes its value once per millisecond", () => {
    const made: number[] = [];
    const cursor = new PerMillisecond((ms) => {
      made.push(ms);
      return `c${ms}`;
    });
    expect(cursor.at(1000)).toBe("c1000");
    expect(cursor.at(1000)).toBe("c1000");
    expect(cursor.at(1001)).toBe("c1001");
    expect(made).toEqual([1000, 1001]);
  });
});
