/**
 * The venue slideshow's playlist, with no browser in it (tested with a fake clock and many
 * uploads). New uploads jump the queue and are marked new once; the rest plays round-robin.
 * Memory is bounded: at most `capacity` items are kept; past it the least recently added item
 * that is not waiting as new is dropped, so hours of uploads do not grow it.
 */
export interface Slide {
  id: string;
}

export interface Pick<T> {
  item: T;
  isNew: boolean;
}

export class SlideQueue<T extends Slide> {
  /** Insertion order = age; a Map keeps it and gives O(1) delete. */
  private readonly items = new Map<string, T>();
  /** Ids of new uploads not shown yet, oldest first (and as a set for membership). */
  private readonly fresh: string[] = [];
  private readonly freshSet = new Set<string>();
  /** Ids still to show in this round. */
  private round: string[] = [];

  constructor(private readonly capacity = 300) {}

  get size(): number {
    return this.items.size;
  }
  get waiting(): number {
    return this.fresh.length;
  }

  has(id: string): boolean {
    return this.items.has(id);
  }

  /** The initial page or a reload: known items, no "new" marks. */
  seed(items: readonly T[]): void {
    for (const it of items) this.put(it);
  }

  /** A live upload: shown next (after earlier new ones), marked new. */
  addNew(item: T): void {
    const known = this.items.has(item.id);
    this.put(item);
    if (!known && !this.freshSet.has(item.id)) {
      this.fresh.push(item.id);
      this.freshSet.add(item.id);
    }
    this.trimFresh();
  }

  /** An edit or finished derivative: replace the stored copy, keep its place. */
  update(item: T): void {
    if (this.items.has(item.id)) this.items.set(item.id, item);
  }

  remove(id: string): void {
    this.items.delete(id);
    if (this.freshSet.delete(id)) this.fresh.splice(this.fresh.indexOf(id), 1);
  }

  removeWhere(pred: (item: T) => boolean): void {
    for (const [id, it] of this.items) if (pred(it)) this.remove(id);
  }

  /** The next slide: a waiting new upload first, else the next of the round (newest first). */
  next(): Pick<T> | null {
    while (this.fresh.length > 0) {
      const id = this.fresh.shift() as string;
      this.freshSet.delete(id);
      const item = this.items.get(id);
      if (item) return { item, isNew: true };
    }
    for (let tries = 0; tries < 2; tries++) {
      while (this.round.length > 0) {
        const id = this.round.shift() as string;
        const item = this.items.get(id);
        if (item) return { item, isNew: false };
      }
      // A new round: newest first (the Map is oldest first).
      this.round = [...this.items.keys()].reverse();
    }
    return null;
  }

  private put(item: T): void {
    this.items.delete(item.id);
    this.items.set(item.id, item);
    while (this.items.size > this.capacity) {
      let victim: string | undefined;
      for (const id of this.items.keys())
        if (!this.freshSet.has(id)) {
          victim = id;
          break;
        }
      if (victim === undefined) break;
      this.items.delete(victim);
    }
    // The round only references ids; dropped ones are skipped when reached, and it never holds
    // more than the ids of one round.
    if (this.round.length > this.capacity) this.round = this.round.slice(-this.capacity);
  }

  /** Never more waiting new uploads than the capacity (a burst keeps the newest). */
  private trimFresh(): void {
    while (this.fresh.length > this.capacity) {
      const id = this.fresh.shift() as string;
      this.freshSet.delete(id);
      this.items.delete(id);
    }
  }
}
