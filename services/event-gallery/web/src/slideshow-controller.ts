import type { Delta, Item } from "../../src/http/schemas.js";
import { SlideQueue } from "./slideshow-queue.js";

/**
 * What the venue slideshow shows and when, with no DOM in it: the page renders `current` and
 * reports back when media loaded, failed or a video ended. Timers and the API are passed in, so a
 * test drives hours of slides and thousands of uploads with a fake clock.
 *
 * Recovery: live events only say "look now"; the truth is the delta. Every event, every reconnect
 * and a slow poll catch up from the last delta cursor, so a dropped stream or network loses
 * nothing: what arrived meanwhile is shown as new once the delta answers again.
 */

/** A photo stays this long on screen. */
export const SLIDE_MS = 7_000;
/** A video plays to its end, but never longer than this. */
export const VIDEO_CAP_MS = 45_000;
/** A failed image is skipped after this (the previous slide stays on screen meanwhile). */
export const RETRY_MS = 1_500;
/** Media URLs carry a 2-hour token: fetch fresh URLs well before they lapse. */
export const REFRESH_MS = 30 * 60_000;
/** A catch-up even without events, in case the stream is down while HTTP works. */
export const POLL_MS = 30_000;
/** Events within this window share one delta request (the delta is rate-limited per user). */
export const CATCH_UP_MS = 1_000;
/** Ids announced as new but not yet displayable (derivatives pending): remembered up to this. */
export const AWAITING_CAP = 500;
/** Delta pages read in one catch-up at most (a long drop); the rest follows on the next poll. */
const MAX_PAGES = 20;

export interface Timers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export const browserTimers: Timers = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

export interface SlideSource {
  feed(): Promise<{ items: Item[]; delta_cursor: string }>;
  delta(cursor: string): Promise<Delta>;
}

export interface ShownSlide {
  item: Item;
  isNew: boolean;
  /** Increases with every slide: the page reports events for a slide by this number. */
  seq: number;
}

/** Shown only once there is something to show: an approved photo with a display image, or a video. */
export const displayable = (i: Item): boolean =>
  i.approval !== "pending" &&
  (i.media_type === "video" ? Boolean(i.original_url) : Boolean(i.display_url ?? i.preview_url));

export class SlideshowController {
  readonly queue: SlideQueue<Item>;
  current: ShownSlide | null = null;
  private cursor: string | null = null;
  /** Insertion-ordered, so the oldest is dropped first past the cap. */
  private readonly awaiting = new Set<string>();
  private seq = 0;
  private failures = 0;
  private slideTimer: unknown = null;
  private catchUpTimer: unknown = null;
  private pollTimer: unknown = null;
  private refreshTimer: unknown = null;
  private busy = false;
  private again = false;
  private stopped = false;

  constructor(
    private readonly source: SlideSource,
    private readonly timers: Timers,
    private readonly onShow: (slide: ShownSlide | null) => void,
    capacity = 300,
  ) {
    this.queue = new SlideQueue<Item>(capacity);
  }

  get awaitingCount(): number {
    return this.awaiting.size;
  }

  async start(): Promise<void> {
    await this.refresh();
    this.loop("poll", POLL_MS, () => this.catchUp());
    this.loop("refresh", REFRESH_MS, () => this.refresh());
    if (!this.current) this.advance();
  }

  stop(): void {
    this.stopped = true;
    for (const h of [this.slideTimer, this.catchUpTimer, this.pollTimer, this.refreshTimer])
      if (h !== null) this.timers.clear(h);
    this.slideTimer = this.catchUpTimer = this.pollTimer = this.refreshTimer = null;
  }

  /** Show the next slide (a waiting new upload first) and arm its timer. */
  advance(): void {
    if (this.stopped) return;
    this.clearSlideTimer();
    const pick = this.queue.next();
    this.current = pick ? { item: pick.item, isNew: pick.isNew, seq: ++this.seq } : null;
    this.onShow(this.current);
    if (this.current) this.arm(this.current.item.media_type === "video" ? VIDEO_CAP_MS : SLIDE_MS);
  }

  /** The page: the slide's media is on screen. */
  loaded(seq: number): void {
    if (this.current?.seq === seq) this.failures = 0;
  }

  /** The page: a video played to its end. */
  ended(seq: number): void {
    if (this.current?.seq === seq) this.advance();
  }

  /**
   * The page: the media could not load (offline, an expired link). Try the next one soon, but
   * after a run of failures only at the normal pace, and fetch fresh URLs once.
   */
  failed(seq: number): void {
    if (this.current?.seq !== seq) return;
    this.failures++;
    if (this.failures === 3) this.refresh();
    this.clearSlideTimer();
    this.arm(this.failures > 3 ? SLIDE_MS : RETRY_MS);
  }

  /** A live event (or "reconnected"). */
  onEvent(event: string, data: Record<string, unknown>): void {
    const id =
      typeof data.id === "string" ? data.id : typeof data.upload_id === "string" ? data.upload_id : null;
    switch (event) {
      case "new-upload":
        if (id) this.remember(id);
        this.scheduleCatchUp();
        break;
      case "upload-removed":
        if (id) this.drop(id);
        break;
      case "user-hidden":
        if (typeof data.user_id === "string") this.hideUser(data.user_id);
        break;
      case "user-unhidden":
        this.refresh();
        break;
      case "upload-processed":
      case "upload-updated":
      case "reconnected":
        this.scheduleCatchUp();
        break;
    }
  }

  /** Read the delta from the last cursor until it has no more (bounded per call). */
  async catchUp(): Promise<void> {
    if (this.stopped) return;
    if (this.cursor === null) return this.refresh();
    if (this.busy) {
      this.again = true;
      return;
    }
    this.busy = true;
    try {
      for (let page = 0; page < MAX_PAGES; page++) {
        const d = await this.source.delta(this.cursor);
        if (this.stopped) return;
        this.cursor = d.cursor;
        this.apply(d);
        if (!d.has_more) break;
      }
    } catch {
      // Offline or rate-limited: the next event, reconnect or poll tries again from the same cursor.
    } finally {
      this.busy = false;
      if (this.again) {
        this.again = false;
        this.scheduleCatchUp();
      }
    }
  }

  /** The first page of the feed: seeds the rotation and renews media URLs of known items. */
  async refresh(): Promise<void> {
    try {
      const page = await this.source.feed();
      if (this.stopped) return;
      this.cursor ??= page.delta_cursor;
      // The page is newest first; the rotation is seeded oldest first (its age order).
      for (const it of [...page.items].reverse()) {
        if (!displayable(it)) continue;
        if (this.queue.has(it.id)) this.queue.update(it);
        else if (this.awaiting.has(it.id)) this.offerNew(it);
        else this.queue.seed([it]);
      }
      if (!this.current) this.advance();
    } catch {
      // Offline: the rotation keeps what it has; the next poll or refresh tries again.
    }
  }

  private apply(d: Delta): void {
    for (const id of d.removed_ids) this.drop(id);
    for (const user of d.hidden_user_ids) this.hideUser(user);
    // Oldest first, so a burst shows in the order it was uploaded.
    const fresh = [...d.items].sort((a, b) => a.created_at.localeCompare(b.created_at));
    for (const it of fresh) this.offerNew(it);
    for (const it of d.changes) {
      if (this.queue.has(it.id)) {
        if (displayable(it)) this.queue.update(it);
        else this.drop(it.id);
      } else if (this.awaiting.has(it.id)) this.offerNew(it);
    }
    if (!this.current) this.advance();
  }

  private offerNew(it: Item): void {
    if (it.approval === "pending") return;
    if (!displayable(it)) {
      this.remember(it.id);
      return;
    }
    this.awaiting.delete(it.id);
    this.queue.addNew(it);
  }

  private remember(id: string): void {
    if (this.queue.has(id)) return;
    this.awaiting.delete(id);
    this.awaiting.add(id);
    for (const old of this.awaiting) {
      if (this.awaiting.size <= AWAITING_CAP) break;
      this.awaiting.delete(old);
    }
  }

  private drop(id: string): void {
    this.queue.remove(id);
    this.awaiting.delete(id);
    if (this.current?.item.id === id) this.advance();
  }

  private hideUser(userId: string): void {
    this.queue.removeWhere((i) => i.uploader.id === userId);
    if (this.current?.item.uploader.id === userId) this.advance();
  }

  private scheduleCatchUp(): void {
    if (this.stopped || this.catchUpTimer !== null) return;
    this.catchUpTimer = this.timers.set(() => {
      this.catchUpTimer = null;
      this.catchUp();
    }, CATCH_UP_MS);
  }

  private arm(ms: number): void {
    this.slideTimer = this.timers.set(() => {
      this.slideTimer = null;
      this.advance();
    }, ms);
  }

  private clearSlideTimer(): void {
    if (this.slideTimer !== null) this.timers.clear(this.slideTimer);
    this.slideTimer = null;
  }

  /** A repeating timer that re-arms itself (one pending handle per loop, never a pile-up). */
  private loop(which: "poll" | "refresh", ms: number, fn: () => Promise<void>): void {
    const tick = () => {
      if (this.stopped) return;
      const h = this.timers.set(() => {
        fn().finally(tick);
      }, ms);
      if (which === "poll") this.pollTimer = h;
      else this.refreshTimer = h;
    };
    tick();
  }
}
