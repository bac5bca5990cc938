import { describe, expect, it } from "vitest";
import { SlideQueue } from "../../web/src/slideshow-queue.js";

/** A clock that moves only when told (no timers, no waiting). */
function fakeClock() {
  let t = 0;
  return {
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

const slide = (n: number) => ({ id: `u${n}`, created_at: new Date(n * 1000).toISOString() });

describe("slideshow queue", () => {
  it("plays newest first, round after round", () => {
    const q = new SlideQueue<ReturnType<typeof slide>>(10);
    q.seed([slide(1), slide(2), slide(3)]);
    const ids = Array.from({ length: 6 }, () => q.next()?.item.id);
    expect(ids).toEqual(["u3", "u2", "u1", "u3", "u2", "u1"]);
  });

  it("new uploads jump the queue, are marked new once, then join the rotation", () => {
    const q = new SlideQueue<ReturnType<typeof slide>>(10);
    q.seed([slide(1), slide(2)]);
    expect(q.next()?.item.id).toBe("u2");
    q.addNew(slide(3));
    q.addNew(slide(4));
    expect(q.next()).toEqual({ item: slide(3), isNew: true });
    expect(q.next()).toEqual({ item: slide(4), isNew: true });
    expect(q.next()).toEqual({ item: slide(1), isNew: false });
    const round = Array.from({ length: 4 }, () => q.next());
    expect(round.map((p) => p?.item.id)).toEqual(["u4", "u3", "u2", "u1"]);
    expect(round.every((p) => p?.isNew === false)).toBe(true);
  });

  it("removed and hidden items are skipped; an empty queue answers null", () => {
    const q = new SlideQueue<ReturnType<typeof slide> & { by?: string }>(10);
    q.seed([slide(1), { ...slide(2), by: "bob" }, slide(3)]);
    q.remove("u3");
    q.addNew({ ...slide(4), by: "bob" });
    q.removeWhere((s) => s.by === "bob");
    expect(q.next()?.item.id).toBe("u1");
    expect(q.next()?.item.id).toBe("u1");
    q.remove("u1");
    expect(q.next()).toBeNull();
  });

  it("runs for hours of uploads without growing: a fake clock, 50,000 uploads, bounded state", () => {
    // The slideshow's timer is driven by this fake clock: one tick per slide.
    const clock = fakeClock();
    const q = new SlideQueue<ReturnType<typeof slide>>(300);
    q.seed(Array.from({ length: 100 }, (_, i) => slide(i)));
    let shown = 0;
    let newShown = 0;
    let n = 100;
    // 8 hours, a slide every 6 s, a burst of uploads every minute (up to 100 at once).
    const end = clock.now() + 8 * 3600_000;
    while (clock.now() < end) {
      clock.advance(6_000);
      if (clock.now() % 60_000 < 6_000) for (let k = 0; k < 104; k++) q.addNew(slide(n++));
      const p = q.next();
      if (p) {
        shown++;
        if (p.isNew) newShown++;
      }
      expect(q.size).toBeLessThanOrEqual(300);
      expect(q.waiting).toBeLessThanOrEqual(300);
    }
    expect(n).toBeGreaterThan(49_000);
    expect(shown).toBe(4800);
    // The first 9 slides (before the first burst at minute one) come from the seed; after that the
    // uploads outpace the slides, so every slide is a new upload.
    expect(newShown).toBe(4800 - 9);
  });

  it("a quiet venue: every new upload is shown next, then the rotation resumes", () => {
    const clock = fakeClock();
    const q = new SlideQueue<ReturnType<typeof slide>>(50);
    q.seed(Array.from({ length: 20 }, (_, i) => slide(i)));
    const seen: string[] = [];
    for (let t = 0; t < 600; t++) {
      clock.advance(6_000);
      if (t % 10 === 5) q.addNew(slide(1000 + t));
      const p = q.next();
      if (p?.isNew) seen.push(p.item.id);
    }
    expect(seen).toHaveLength(60);
    expect(q.size).toBe(50);
  });
});
