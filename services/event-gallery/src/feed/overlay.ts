/**
 * The per-request overlay of a cached feed page or delta (issue 27): what a like or a comment
 * changes (the counts) and what differs between viewers (`liked_by_me`) is filled into a cached
 * template per request, from per-process caches checked against what the session read brought:
 * - counts: kept per upload while the feed stamp and the social stamp (migrations 010, 011) both
 *   stand; a like or comment bumps the social stamp, and the next request re-reads the counts of
 *   its page's uploads only (one statement), never the page;
 * - per-viewer fields: kept per viewer while that viewer's `users.viewer_rev` stands (bumped by
 *   trigger with each change of the viewer's own likes), so other guests' reactions cost nothing.
 *
 * Adding a per-viewer boolean field (as `favorited_by_me` was, migration 013):
 * 1. a migration adds a trigger on its table calling `viewer_rev_bump` (PostgreSQL) / updating
 *    `users.viewer_rev` (SQLite) for the row's `user_id` on insert and delete;
 * 2. its name goes at the end of VIEWER_FIELDS and its reader (which of `ids` the viewer has set,
 *    one statement) at the same place in the list createFeedCaches (feed.ts) gives ViewerMasks;
 * 3. the field goes into FeedItem/toFeedItem (serialize.ts), the item query, and the Item schema.
 * The templates turn every field named here into a hole; nothing else changes.
 */

/** Counts filled per request (kept under both stamps). Order = the number arrays' order. */
export const COUNT_FIELDS = ["like_count", "comment_count"] as const;
/** Per-viewer boolean fields; bit i of a viewer's mask for an upload is VIEWER_FIELDS[i]. */
export const VIEWER_FIELDS = ["liked_by_me", "favorited_by_me"] as const;

export type Counts = readonly number[];
/** Reads the counts (COUNT_FIELDS order) of `ids`; ids that no longer exist may be absent. */
export type CountsReader = (ids: readonly string[]) => Promise<Map<string, Counts>>;
/** Which of `ids` the viewer has set, for one field. */
export type ViewerFieldReader = (viewer: string, ids: readonly string[]) => Promise<Set<string>>;

export interface Stamps {
  feed: number;
  social: number;
}

/** Component-wise order of two stamp pairs: 1 newer, 0 equal, -1 older, NaN neither. */
export function compareStamps(a: Stamps, b: Stamps): number {
  const df = Math.sign(a.feed - b.feed);
  const ds = Math.sign(a.social - b.social);
  if (df === ds || ds === 0) return df;
  return df === 0 ? ds : Number.NaN;
}

/**
 * Like and comment counts per upload for the newest stamp pair seen. A request brings the pair it
 * read with its session: a newer pair drops everything; an older one is served what is kept (newer
 * than it needs), and what it reads is kept too (read after some session read saw the current
 * pair, so never older than it) unless the pair moved on meanwhile. Concurrent requests missing
 * the same uploads share one read.
 */
export class SocialCounts {
  private at: Stamps = { feed: Number.NEGATIVE_INFINITY, social: Number.NEGATIVE_INFINITY };
  private readonly known = new Map<string, Counts>();
  private readonly inflight = new Map<string, Promise<Map<string, Counts>>>();

  constructor(
    private readonly read: CountsReader,
    private readonly cap = 20_000,
  ) {}

  /** Counts of `ids`, from memory where the pair allows. */
  async of(stamps: Stamps | null, ids: readonly string[]): Promise<ReadonlyMap<string, Counts>> {
    const current = stamps !== null && this.moveTo(stamps);
    const out = new Map<string, Counts>();
    const missing: string[] = [];
    const waits = new Set<Promise<Map<string, Counts>>>();
    for (const id of ids) {
      const hit = current ? this.known.get(id) : undefined;
      if (hit) out.set(id, hit);
      else {
        const pending = current ? this.inflight.get(id) : undefined;
        if (pending) waits.add(pending);
        else missing.push(id);
      }
    }
    if (missing.length > 0) {
      const read = this.read(missing);
      if (current) this.track(read, missing);
      waits.add(read);
    }
    for (const w of waits) for (const [id, c] of await w) out.set(id, c);
    return out;
  }

  /** Counts read with a page (after the session read that brought `stamps`). */
  seed(stamps: Stamps, counts: Iterable<[string, Counts]>): void {
    if (!this.moveTo(stamps)) return;
    for (const [id, c] of counts) this.keep(id, c);
  }

  private track(read: Promise<Map<string, Counts>>, ids: readonly string[]) {
    const at = this.at;
    for (const id of ids) this.inflight.set(id, read);
    const settle = (rows: Map<string, Counts> | null) => {
      if (this.at !== at) return; // the pair moved on meanwhile: everything was dropped
      for (const id of ids) {
        if (this.inflight.get(id) === read) this.inflight.delete(id);
        const c = rows?.get(id);
        if (c) this.keep(id, c);
      }
    };
    read.then(settle, () => settle(null));
  }

  private keep(id: string, c: Counts) {
    if (this.known.size >= this.cap) this.known.clear();
    this.known.set(id, c);
  }

  /** False when `stamps` is unordered with the current pair; moves to it when newer. */
  private moveTo(stamps: Stamps): boolean {
    const c = compareStamps(stamps, this.at);
    if (c === 1) {
      this.known.clear();
      this.inflight.clear();
      this.at = { feed: stamps.feed, social: stamps.social };
    }
    return !Number.isNaN(c);
  }
}

/**
 * Per-viewer field masks per upload (bit i = VIEWER_FIELDS[i]), kept per viewer while the
 * viewer revision read with the session stands. A request that read an older revision than the
 * one kept is served what is kept (it is newer), and what it reads is kept as well (as in
 * SocialCounts). Bounded: least recently used viewers go first; a viewer's map is cleared when it
 * grows past its bound.
 */
export class ViewerMasks {
  private readonly viewers = new Map<string, { rev: number; known: Map<string, number> }>();

  constructor(
    private readonly readers: readonly ViewerFieldReader[],
    private readonly cap = 10_000,
    private readonly perViewer = 2_000,
  ) {}

  async of(
    viewer: string,
    rev: number | undefined,
    ids: readonly string[],
  ): Promise<ReadonlyMap<string, number>> {
    let entry = rev === undefined ? undefined : this.viewers.get(viewer);
    if (rev !== undefined) {
      if (!entry || rev > entry.rev) entry = { rev, known: new Map() };
      // Most recently used last.
      this.viewers.delete(viewer);
      if (this.viewers.size >= this.cap) {
        const oldest = this.viewers.keys().next().value;
        if (oldest !== undefined) this.viewers.delete(oldest);
      }
      this.viewers.set(viewer, entry);
    }
    const out = new Map<string, number>();
    const missing: string[] = [];
    for (const id of ids) {
      const m = entry?.known.get(id);
      if (m === undefined) missing.push(id);
      else out.set(id, m);
    }
    if (missing.length === 0) return out;
    const sets = await Promise.all(this.readers.map((read) => read(viewer, missing)));
    const known = entry && this.viewers.get(viewer) === entry ? entry.known : null;
    if (known && known.size + missing.length > this.perViewer) known.clear();
    for (const id of missing) {
      let m = 0;
      sets.forEach((s, bit) => {
        if (s.has(id)) m |= 1 << bit;
      });
      out.set(id, m);
      known?.set(id, m);
    }
    return out;
  }
}
