import { COUNT_FIELDS, type Counts, compareStamps, type Stamps, VIEWER_FIELDS } from "./overlay.js";
import type { ItemRow } from "./repository.js";
import { toFeedItem } from "./serialize.js";

/** What a request fills into a template's holes. */
export interface Overlay {
  /** The media token, URL-encoded (then it needs no JSON escaping). */
  token: string;
  /** Cursors by slot (base64url: no JSON escaping). */
  cursors: readonly string[];
  /** Counts by upload id, in COUNT_FIELDS order. */
  counts: ReadonlyMap<string, Counts>;
  /** Per-viewer field masks by upload id (bit i = VIEWER_FIELDS[i]). */
  masks: ReadonlyMap<string, number>;
}

const TOKEN = 0;
const CURSOR = 1;
const COUNT = 2;
const FLAG = 3;
interface Hole {
  kind: number;
  /** The cursor slot, the count's index in COUNT_FIELDS or the flag's bit. */
  index: number;
  /** The upload of a count or flag hole. */
  id: string;
  /** A count's value when the template was built (used when the overlay lacks the upload). */
  fallback: number;
}

const TRUE = Buffer.from("true");
const FALSE = Buffer.from("false");
const SMALL = Array.from({ length: 1024 }, (_, n) => Buffer.from(String(n)));
const numberBytes = (n: number) => SMALL[n] ?? Buffer.from(String(n));
const URL_KEYS = new Set(["original_url", "preview_url", "display_url", "thumbnail_url"]);
const COUNT_INDEX = new Map<string, number>(COUNT_FIELDS.map((f, i) => [f, i]));
const FLAG_BIT = new Map<string, number>(VIEWER_FIELDS.map((f, i) => [f, i]));

/**
 * A JSON answer of feed items (a /feed page, a /feed/delta) as UTF-8 bytes with holes for what a
 * request fills in: the media token of every media URL, cursors that follow the clock, the counts
 * (COUNT_FIELDS) and the per-viewer fields (VIEWER_FIELDS) of each item. Everything else (names,
 * captions, tags, paths, ids) is the same for every viewer while the feed stamp stands, so it is
 * serialized once.
 */
export class JsonTemplate {
  /** `holes[i]` sits between `bytes[i]` and `bytes[i + 1]`. */
  private constructor(
    private readonly bytes: readonly Buffer[],
    private readonly holes: readonly Hole[],
    /** Every upload id with holes, in order, once. */
    readonly ids: readonly string[],
  ) {}

  static builder(): TemplateBuilder {
    return new TemplateBuilder((parts, holes, ids) => new JsonTemplate(parts, holes, ids));
  }

  render(o: Overlay): Buffer {
    const tok = Buffer.from(o.token, "latin1");
    const cursors = o.cursors.map((c) => Buffer.from(c, "latin1"));
    const first = this.bytes[0] as Buffer;
    const list: Buffer[] = [first];
    let length = first.length;
    for (let i = 0; i < this.holes.length; i++) {
      const h = this.holes[i] as Hole;
      let hole: Buffer;
      if (h.kind === TOKEN) hole = tok;
      else if (h.kind === CURSOR) hole = cursors[h.index] as Buffer;
      else if (h.kind === COUNT) hole = numberBytes(o.counts.get(h.id)?.[h.index] ?? h.fallback);
      else hole = ((o.masks.get(h.id) ?? 0) >> h.index) & 1 ? TRUE : FALSE;
      const part = this.bytes[i + 1] as Buffer;
      list.push(hole, part);
      length += hole.length + part.length;
    }
    return Buffer.concat(list, length);
  }
}

export class TemplateBuilder {
  private readonly parts: string[] = [];
  private readonly holes: Hole[] = [];
  private readonly ids = new Set<string>();
  private current = "";

  constructor(private readonly make: (parts: Buffer[], holes: Hole[], ids: string[]) => JsonTemplate) {}

  lit(s: string): this {
    this.current += s;
    return this;
  }

  /** A cursor slot (the value is written between the quotes the caller puts around it). */
  cursor(slot: number): this {
    return this.hole({ kind: CURSOR, index: slot, id: "", fallback: 0 });
  }

  /** A JSON array of feed items. */
  items(rows: readonly ItemRow[]): this {
    this.lit("[");
    rows.forEach((r, i) => {
      if (i > 0) this.lit(",");
      this.item(r);
    });
    return this.lit("]");
  }

  done(): JsonTemplate {
    this.parts.push(this.current);
    return this.make(
      this.parts.map((p) => Buffer.from(p, "utf8")),
      this.holes,
      [...this.ids],
    );
  }

  private hole(h: Hole): this {
    this.parts.push(this.current);
    this.holes.push(h);
    this.current = "";
    return this;
  }

  /** The item exactly as toFeedItem shapes it (same keys, same order), overlay parts as holes. */
  private item(r: ItemRow) {
    this.ids.add(r.id);
    const item = toFeedItem(r, { id: "", mediaToken: "" });
    let sep = "{";
    for (const [k, v] of Object.entries(item)) {
      this.lit(`${sep}${JSON.stringify(k)}:`);
      sep = ",";
      const count = COUNT_INDEX.get(k);
      const bit = FLAG_BIT.get(k);
      if (count !== undefined) this.hole({ kind: COUNT, index: count, id: r.id, fallback: Number(v) });
      else if (bit !== undefined) this.hole({ kind: FLAG, index: bit, id: r.id, fallback: 0 });
      else if (URL_KEYS.has(k) && typeof v === "string") {
        // "...?t=" then the token, then the closing quote.
        this.lit(JSON.stringify(v).slice(0, -1));
        this.hole({ kind: TOKEN, index: 0, id: "", fallback: 0 });
        this.lit('"');
      } else this.lit(JSON.stringify(v));
    }
    this.lit("}");
  }
}

/** The counts of rows read by an item statement, for SocialCounts.seed. */
export const countsOfRows = (rows: readonly ItemRow[]): [string, Counts][] =>
  rows.map((r) => [r.id, [Number(r.like_count ?? 0), Number(r.comment_count ?? 0)]]);

/**
 * Values of one process (templates, change lists, item rows) for the newest stamp pair seen,
 * compared component-wise with the stamps a request read with its session. A request with a newer
 * pair drops everything and makes its pair the current one; a request with an older pair is served
 * what is kept, which is newer than it needs. A value read after `lookup` is never older than the
 * current pair then (some session read saw that pair before), so `store` keeps it unless the pair
 * moved on meanwhile. `social: false` keys on the feed stamp alone. Bounded: the least recently
 * stored goes first.
 */
export class StampedCache<V> {
  private at: Stamps = { feed: Number.NEGATIVE_INFINITY, social: Number.NEGATIVE_INFINITY };
  private gen = 0;
  private readonly entries = new Map<string, V>();
  /** Values being made, by key, with the generation they were started in. */
  private readonly making = new Map<string, { gen: number; value: Promise<V> }>();

  constructor(
    /** Whether the social stamp counts (deltas) or only the feed stamp (pages). */
    private readonly social: boolean,
    private readonly cap = 500,
  ) {}

  /** The kept value (if any) and the generation to store a new one under (-1: do not store). */
  lookup(stamps: Stamps, key: string): { hit: V | undefined; gen: number } {
    const own = { feed: stamps.feed, social: this.social ? stamps.social : 0 };
    const c = compareStamps(own, this.at);
    if (c === 1) {
      this.entries.clear();
      this.making.clear();
      this.at = own;
      this.gen++;
    } else if (Number.isNaN(c)) return { hit: undefined, gen: -1 };
    return { hit: this.entries.get(key), gen: this.gen };
  }

  store(gen: number, key: string, value: V): void {
    if (gen !== this.gen) return;
    this.entries.delete(key);
    if (this.entries.size >= this.cap) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, value);
  }

  /**
   * `lookup`, else `make()` stored under the generation of the lookup. Requests that miss the same
   * key in the same generation share one `make()` (after a like, the many requests in flight would
   * otherwise each build the same value).
   */
  async get(stamps: Stamps, key: string, make: () => Promise<V>): Promise<V> {
    const { hit, gen } = this.lookup(stamps, key);
    if (hit !== undefined) return hit;
    const pending = gen === -1 ? undefined : this.making.get(key);
    if (pending && pending.gen === gen) return pending.value;
    const value = make();
    if (gen !== -1) {
      const entry = { gen, value };
      this.making.set(key, entry);
      const done = () => {
        if (this.making.get(key) === entry) this.making.delete(key);
      };
      value.then((v) => {
        done();
        this.store(gen, key, v);
      }, done);
    }
    return value;
  }
}

/** A delta's cursor: after the cut or the last change, else the settled clock. */
export interface DeltaResume {
  /** Set when the delta was cut (has_more): always resume there. */
  cut: string | null;
  /** The last change returned, as (changed_at, cursor). */
  last: { changed_at: string; cursor: string } | null;
}

/** `make(nowMs)`, made once per millisecond (every request of that millisecond gets the same). */
export class PerMillisecond {
  private atMs = Number.NaN;
  private value = "";
  constructor(private readonly make: (nowMs: number) => string) {}
  at(nowMs: number): string {
    if (nowMs !== this.atMs) {
      this.value = this.make(nowMs);
      this.atMs = nowMs;
    }
    return this.value;
  }
}
