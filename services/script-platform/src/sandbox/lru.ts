const NONE = Symbol("none");

/** A bounded least-recently-used map: at the cap the oldest entry makes room. */
export class Lru<K, V> {
  private readonly map = new Map<K, V>();
  /**
   * The key last stored or read (the map's newest) while it is in the map: a hot route reads
   * the same key on every request, and moving the newest entry to the end changes nothing.
   */
  private newest: unknown = NONE;
  constructor(readonly capacity: number) {}

  get(key: K): V | undefined {
    const v = this.map.get(key);
    if (v === undefined) return undefined;
    if (this.newest === key) return v;
    this.map.delete(key);
    this.map.set(key, v);
    this.newest = key;
    return v;
  }

  set(key: K, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    this.newest = key;
    while (this.map.size > this.capacity) {
      const oldest = this.map.keys().next();
      if (oldest.done) break;
      this.map.delete(oldest.value);
    }
  }

  get size(): number {
    return this.map.size;
  }
}
