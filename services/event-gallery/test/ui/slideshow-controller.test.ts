import { describe, expect, it } from "vitest";
import type { Delta, Item } from "../../src/http/schemas.js";
import {
  AWAITING_CAP,
  type ShownSlide,
  SLIDE_MS,
  type SlideSource,
  SlideshowController,
  type Timers,
  VIDEO_CAP_MS,
} from "../../web/src/slideshow-controller.js";

/** Timers on a fake clock: `advance` runs what falls due, in order; nothing waits for real. */
function fakeTimers() {
  let now = 0;
  let nextId = 1;
  const pending = new Map<number, { at: number; fn: () => void }>();
  const timers: Timers = {
    set(fn, ms) {
      const id = nextId++;
      pending.set(id, { at: now + ms, fn });
      return id;
    },
    clear(h) {
      pending.delete(h as number);
    },
  };
  return {
    timers,
    pending: () => pending.size,
    now: () => now,
    /** Run due timers (and the promises they start) up to `now + ms`. */
    async advance(ms: number) {
      const end = now + ms;
      for (;;) {
        let due: [number, { at: number; fn: () => void }] | undefined;
        for (const e of pending) if (e[1].at <= end && (!due || e[1].at < due[1].at)) due = e;
        if (!due) break;
        pending.delete(due[0]);
        now = due[1].at;
        due[1].fn();
        await flush();
      }
      now = end;
      await flush();
    },
  };
}
const flush = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

let n = 0;
const item = (over: Partial<Item> = {}): Item => {
  n++;
  const id = over.id ?? `u${n}`;
  return {
    id,
    uploader: { id: "ann", display_name: "Ann" },
    caption: "",
    hashtags: [],
    media_type: "image",
    mime_type: "image/jpeg",
    created_at: new Date(n * 1000).toISOString(),
    updated_at: new Date(n * 1000).toISOString(),
    like_count: 0,
    comment_count: 0,
    liked_by_me: false,
    compression_status: "done",
    width: 10,
    height: 10,
    duration_s: null,
    original_url: `/o/${id}`,
    preview_url: `/p/${id}`,
    display_url: `/d/${id}`,
    thumbnail_url: `/t/${id}`,
    approval: "approved",
    ...over,
  };
};

/** A server stand-in: a feed page and a delta log the test appends to; it can go offline. */
function fakeServer(initial: Item[]) {
  const log: { at: number; kind: "item" | "change" | "removed" | "hidden"; value: Item | string }[] = [];
  let seq = 0;
  const state = { offline: false, feedCalls: 0, deltaCalls: 0 };
  const source: SlideSource = {
    async feed() {
      state.feedCalls++;
      if (state.offline) throw new Error("offline");
      return { items: [...initial].reverse(), delta_cursor: String(seq) };
    },
    async delta(cursor) {
      state.deltaCalls++;
      if (state.offline) throw new Error("offline");
      const from = Number(cursor);
      const page = log.filter((e) => e.at > from).slice(0, 100);
      const d: Delta = {
        items: page.filter((e) => e.kind === "item").map((e) => e.value as Item),
        changes: page.filter((e) => e.kind === "change").map((e) => e.value as Item),
        removed_ids: page.filter((e) => e.kind === "removed").map((e) => e.value as string),
        hidden_user_ids: page.filter((e) => e.kind === "hidden").map((e) => e.value as string),
        cursor: String(page.at(-1)?.at ?? from),
        has_more: log.filter((e) => e.at > from).length > page.length,
      } as Delta;
      return d;
    },
  };
  return {
    source,
    state,
    push(kind: "item" | "change" | "removed" | "hidden", value: Item | string) {
      log.push({ at: ++seq, kind, value });
      // The log is the server's; the client only ever holds what the delta handed it.
      if (log.length > 5000) log.splice(0, log.length - 5000);
    },
  };
}

function setup(initial: Item[], capacity = 50) {
  const clock = fakeTimers();
  const server = fakeServer(initial);
  const shown: (ShownSlide | null)[] = [];
  const ctl = new SlideshowController(server.source, clock.timers, (s) => shown.push(s), capacity);
  return { clock, server, shown, ctl };
}

describe("slideshow controller", () => {
  it("rotates photos on a timer, videos until they end or the cap", async () => {
    const video = item({ media_type: "video", display_url: null, preview_url: null });
    const photos = [item(), item()];
    const { clock, shown, ctl } = setup([...photos, video]);
    await ctl.start();
    expect(shown.at(-1)?.item.id).toBe(video.id);
    // The video ends early: the next slide comes at once.
    await clock.advance(3_000);
    ctl.ended(shown.at(-1)!.seq);
    expect(shown.at(-1)?.item.id).toBe(photos[1]!.id);
    await clock.advance(SLIDE_MS);
    expect(shown.at(-1)?.item.id).toBe(photos[0]!.id);
    await clock.advance(SLIDE_MS);
    expect(shown.at(-1)?.item.id).toBe(video.id);
    // A video that never ends is cut at the cap.
    const before = shown.length;
    await clock.advance(VIDEO_CAP_MS - 1);
    expect(shown.length).toBe(before);
    await clock.advance(1);
    expect(shown.length).toBe(before + 1);
    // A stale "ended" of an earlier slide changes nothing.
    ctl.ended(shown.at(-3)!.seq);
    expect(shown.length).toBe(before + 1);
    ctl.stop();
  });

  it("a new upload jumps the queue marked new, once its display image exists; pending ones never show", async () => {
    const { clock, server, shown, ctl } = setup([item(), item()]);
    await ctl.start();
    const fresh = item({ display_url: null, preview_url: null, thumbnail_url: null });
    server.push("item", fresh);
    ctl.onEvent("new-upload", { id: fresh.id });
    await clock.advance(1_000);
    // Not displayable yet: remembered, not shown.
    expect(shown.some((s) => s?.item.id === fresh.id)).toBe(false);
    expect(ctl.awaitingCount).toBe(1);
    server.push("change", { ...fresh, display_url: `/d/${fresh.id}` });
    ctl.onEvent("upload-processed", { id: fresh.id });
    await clock.advance(1_000);
    await clock.advance(SLIDE_MS);
    expect(shown.at(-1)).toMatchObject({ item: { id: fresh.id }, isNew: true });
    expect(ctl.awaitingCount).toBe(0);
    const pending = item({ approval: "pending" });
    server.push("item", pending);
    ctl.onEvent("new-upload", { id: pending.id });
    await clock.advance(SLIDE_MS * 5);
    expect(shown.some((s) => s?.item.id === pending.id)).toBe(false);
    ctl.stop();
  });

  it("a removed or hidden upload on screen is replaced at once", async () => {
    const bob = item({ uploader: { id: "bob", display_name: "Bob" } });
    const keep = item();
    const { shown, ctl } = setup([keep, bob]);
    await ctl.start();
    expect(shown.at(-1)?.item.id).toBe(bob.id);
    ctl.onEvent("user-hidden", { user_id: "bob" });
    expect(shown.at(-1)?.item.id).toBe(keep.id);
    ctl.onEvent("upload-removed", { upload_id: keep.id });
    expect(shown.at(-1)).toBeNull();
    ctl.stop();
  });

  it("recovers after a network drop: uploads made while offline show as new after the catch-up", async () => {
    const { clock, server, shown, ctl } = setup([item(), item(), item()]);
    await ctl.start();
    server.state.offline = true;
    const during = [item(), item()];
    for (const d of during) server.push("item", d);
    // Events are lost while offline, and polls fail; the slideshow keeps rotating what it has.
    await clock.advance(120_000);
    expect(shown.every((s) => s !== null)).toBe(true);
    expect(shown.some((s) => during.some((d) => d.id === s?.item.id))).toBe(false);
    server.state.offline = false;
    ctl.onEvent("reconnected", {});
    await clock.advance(1_000);
    await clock.advance(SLIDE_MS);
    await clock.advance(SLIDE_MS);
    const news = shown.slice(-2);
    expect(news.map((s) => s?.item.id)).toEqual(during.map((d) => d.id));
    expect(news.every((s) => s?.isNew)).toBe(true);
  });

  it("runs 8 hours with 40,000 uploads on a fake clock: queue, remembered ids and timers stay bounded", async () => {
    const cap = 100;
    const { clock, server, shown, ctl } = setup(
      Array.from({ length: 30 }, () => item()),
      cap,
    );
    await ctl.start();
    let uploads = 0;
    let maxPending = 0;
    for (let minute = 0; minute < 8 * 60; minute++) {
      // 80 uploads a minute, half of them announced before their display image exists.
      for (let k = 0; k < 80; k++) {
        const slow = k % 2 === 0;
        const it = item(slow ? { display_url: null, preview_url: null } : {});
        server.push("item", it);
        ctl.onEvent("new-upload", { id: it.id });
        if (slow && k % 4 === 0) server.push("change", { ...it, display_url: `/d/${it.id}` });
        uploads++;
      }
      if (minute % 17 === 0) server.push("removed", shown.at(-1)?.item.id ?? "none");
      // A ten-minute network drop every two hours.
      server.state.offline = minute % 120 >= 60 && minute % 120 < 70;
      if (minute % 120 === 70) ctl.onEvent("reconnected", {});
      for (let s = 0; s < 6; s++) {
        await clock.advance(10_000);
        const cur = shown.at(-1);
        if (cur) ctl.loaded(cur.seq);
        maxPending = Math.max(maxPending, clock.pending());
        expect(ctl.queue.size).toBeLessThanOrEqual(cap);
        expect(ctl.queue.waiting).toBeLessThanOrEqual(cap);
        expect(ctl.awaitingCount).toBeLessThanOrEqual(AWAITING_CAP);
      }
    }
    expect(uploads).toBe(38_400);
    // One slide timer, one catch-up, one poll, one refresh at most.
    expect(maxPending).toBeLessThanOrEqual(4);
    // Roughly one slide per SLIDE_MS for 8 hours, and most of them new uploads.
    const slides = shown.filter(Boolean) as ShownSlide[];
    expect(slides.length).toBeGreaterThan((8 * 3600_000) / SLIDE_MS - 50);
    expect(slides.filter((s) => s.isNew).length).toBeGreaterThan(slides.length * 0.8);
    expect(server.state.deltaCalls).toBeLessThan((8 * 3600_000) / 1_000);
    ctl.stop();
    expect(clock.pending()).toBe(0);
  });
});
