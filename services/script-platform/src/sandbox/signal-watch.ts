/**
 * Many items watching one AbortSignal through a single listener: every run of a dispatcher shares
 * its shutdown signal, and a listener per run would pile up on it (hundreds of parked runs at
 * once), each removal walking the list.
 */
export class SignalWatch<T> {
  private readonly bySignal = new Map<AbortSignal, { items: Set<T>; listener: () => void }>();

  /** `onAbort` gets the items still watching a signal when it aborts. */
  constructor(private readonly onAbort: (items: T[]) => void) {}

  add(signal: AbortSignal | undefined, item: T): void {
    if (!signal) return;
    let w = this.bySignal.get(signal);
    if (!w) {
      const items = new Set<T>();
      const listener = () => {
        this.bySignal.delete(signal);
        this.onAbort([...items]);
      };
      w = { items, listener };
      this.bySignal.set(signal, w);
      signal.addEventListener("abort", listener, { once: true });
    }
    w.items.add(item);
  }

  delete(signal: AbortSignal | undefined, item: T): void {
    const w = signal ? this.bySignal.get(signal) : undefined;
    if (!signal || !w) return;
    w.items.delete(item);
    if (w.items.size > 0) return;
    this.bySignal.delete(signal);
    signal.removeEventListener("abort", w.listener);
  }

  /** Signals listened to now (tests). */
  get signals(): number {
    return this.bySignal.size;
  }
}
