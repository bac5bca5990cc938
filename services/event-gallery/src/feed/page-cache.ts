import type { ItemRow } from "./repository.js";
import { toFeedItem } from "./serialize.js";

/**
 * A feed page as JSON text with holes for what differs between viewers: the media token of every
 * media URL and each item's `liked_by_me` and `favorited_by_me`, plus the request's `delta_cursor`. Everything else
 * (items, counts, paths, names, tags, next cursor) is the same for every viewer of the same
 * (filters, cursor, limit) while the feed stamp stays the same, so it is built and serialized once.
 */
export class PageTemplate {
  /** `holes[i]` sits between `parts[i]` and `parts[i + 1]`. */
  private readonly parts: string[] = [];
  private readonly holes: number[] = [];
  private current = "";

  private constructor(readonly ids: readonly string[]) {}

  /** Build from the page's rows (already cut to the limit) and its next cursor. */
  static of(rows: readonly ItemRow[], nextCursor: string | null): PageTemplate {
    const t = new PageTemplate(rows.map((r) => r.id));
    t.lit('{"items":[');
    rows.forEach((r, i) => {
      if (i > 0) t.lit(",");
      t.item(r, i);
    });
    t.lit(`],"next_cursor":${JSON.stringify(nextCursor)},"delta_cursor":"`);
    t.hole(DELTA);
    t.lit('"}');
    t.parts.push(t.current);
    t.bytes = t.parts.map((p) => Buffer.from(p, "utf8"));
    return t;
  }

  /** The literal parts as UTF-8, encoded once: a response is then a copy of bytes, not a string to encode. */
  private bytes: Buffer[] = [];

  /**
   * The page for one viewer, as UTF-8 bytes. `token` must be URL-safe as it is (the caller
   * encodes it), and `deltaCursor` base64url: neither needs JSON escaping.
   */
  render(
    token: string,
    liked: ReadonlySet<string>,
    deltaCursor: string,
    favorited: ReadonlySet<string> = NONE,
  ): Buffer {
    const tok = Buffer.from(token, "latin1");
    const delta = Buffer.from(deltaCursor, "latin1");
    const first = this.bytes[0] as Buffer;
    const list: Buffer[] = [first];
    let length = first.length;
    for (let i = 0; i < this.holes.length; i++) {
      const h = this.holes[i] as number;
      const hole =
        h === TOKEN
          ? tok
          : h === DELTA
            ? delta
            : h <= FAVORITE
              ? favorited.has(this.ids[FAVORITE - h] as string)
                ? TRUE
                : FALSE
              : liked.has(this.ids[h] as string)
                ? TRUE
                : FALSE;
      const part = this.bytes[i + 1] as Buffer;
      list.push(hole, part);
      length += hole.length + part.length;
    }
    return Buffer.concat(list, length);
  }

  private lit(s: string) {
    this.current += s;
  }

  private hole(h: number) {
    this.parts.push(this.current);
    this.holes.push(h);
    this.current = "";
  }

  /** The item exactly as toFeedItem shapes it (same keys, same order), viewer parts as holes. */
  private item(r: ItemRow, index: number) {
    const item = toFeedItem(r, { id: "", mediaToken: "" });
    let sep = "{";
    for (const [k, v] of Object.entries(item)) {
      this.lit(`${sep}${JSON.stringify(k)}:`);
      sep = ",";
      if (k === "liked_by_me") this.hole(index);
      else if (k === "favorited_by_me") this.hole(FAVORITE - index);
      else if (URL_KEYS.has(k) && typeof v === "string") {
        // "...?t=" then the token, then the closing quote.
        this.lit(JSON.stringify(v).slice(0, -1));
        this.hole(TOKEN);
        this.lit('"');
      } else this.lit(JSON.stringify(v));
    }
    this.lit("}");
  }
}

const TOKEN = -1;
const TRUE = Buffer.from("true");
const FALSE = Buffer.from("false");
const DELTA = -2;
/** `favorited_by_me` of item i is the hole FAVORITE - i. */
const FAVORITE = -3;
const NONE: ReadonlySet<string> = new Set();
const URL_KEYS = new Set(["original_url", "preview_url", "display_url", "thumbnail_url"]);

/**
 * Page templates of one process, valid for one feed stamp, and the `liked_by_me` sets of the
 * viewers who asked for them. A request brings the stamp it read (before any page statement ran,
 * so a page or liked set read after that is never older than its stamp): a newer stamp drops
 * everything; an older one is served from the database and not kept. Every like and unlike bumps
 * the stamp (migration 010's trigger on likes), so a viewer's liked set of a page holds while the
 * stamp stands. Both maps are bounded (least recently used dropped).
 */
export class FeedPageCache {
  private stamp = Number.NEGATIVE_INFINITY;
  private readonly pages = new Map<string, PageTemplate>();
  /** Keyed by viewer id and page key. */
  private readonly liked = new Map<string, ReadonlySet<string>>();
  /** The last delta cursor made, for the millisecond it was made in. */
  private cursorAt = Number.NaN;
  private cursor = "";

  constructor(
    private readonly cap = 500,
    private readonly likedCap = 10_000,
  ) {}

  get(stamp: number, key: string): PageTemplate | undefined {
    return stamp === this.stamp ? this.pages.get(key) : undefined;
  }

  set(stamp: number, key: string, page: PageTemplate): void {
    if (this.at(stamp)) remember(this.pages, key, page, this.cap);
  }

  /** The ids of the page under `key` that `viewer` likes, when known for this stamp. */
  likedOf(stamp: number, viewer: string, key: string): ReadonlySet<string> | undefined {
    if (stamp !== this.stamp) return undefined;
    const k = `${viewer}\n${key}`;
    const hit = this.liked.get(k);
    if (hit) {
      // Most recently used last.
      this.liked.delete(k);
      this.liked.set(k, hit);
    }
    return hit;
  }

  setLiked(stamp: number, viewer: string, key: string, ids: ReadonlySet<string>): void {
    if (this.at(stamp)) remember(this.liked, `${viewer}\n${key}`, ids, this.likedCap);
  }

  /** `make(nowMs)`, made once per millisecond (every request of that millisecond gets the same). */
  deltaCursor(nowMs: number, make: (nowMs: number) => string): string {
    if (nowMs !== this.cursorAt) {
      this.cursor = make(nowMs);
      this.cursorAt = nowMs;
    }
    return this.cursor;
  }

  /** Moves to a newer stamp (dropping everything); false when `stamp` is older than the current. */
  private at(stamp: number): boolean {
    if (!Number.isFinite(stamp)) return false;
    if (stamp > this.stamp) {
      this.pages.clear();
      this.liked.clear();
      this.stamp = stamp;
    }
    return stamp === this.stamp;
  }
}

function remember<V>(map: Map<string, V>, key: string, value: V, cap: number): void {
  map.delete(key);
  if (map.size >= cap) {
    const oldest = map.keys().next().value;
    if (oldest !== undefined) map.delete(oldest);
  }
  map.set(key, value);
}
