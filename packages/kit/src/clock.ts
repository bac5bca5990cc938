/**
 * Time as a dependency. Every module that depends on time takes a Clock so that tests can
 * move time forward instead of sleeping (DESIGN.md "Time").
 */
export interface TimerHandle {
  cancel(): void;
}

export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
  /** RFC 3339 UTC with milliseconds. */
  iso(): string;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  setInterval(fn: () => void, ms: number): TimerHandle;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Years 0000-9999: toISOString's four-digit form (outside it, `+YYYYYY`). */
const FOUR_DIGIT_YEARS_END = 253402300800000;
const MILLIS = Array.from({ length: 1000 }, (_, i) => `${String(i).padStart(3, "0")}Z`);
/**
 * The text up to the second of the two seconds formatted last: a request writes times of now and
 * of a deadline (a lease), and one entry would be replaced on every other call.
 */
const isoSeconds = [Number.NaN, Number.NaN];
const isoPrefixes = ["", ""];
let isoOlder = 0;

/**
 * `new Date(ms).toISOString()`, with the text up to the second reused while the second is the
 * same: timestamps are written several times per request and run, and building a Date and its
 * string each time showed up in the hot path's profile.
 */
export const toIso = (ms: number): string => {
  if (!(ms >= 0 && ms < FOUR_DIGIT_YEARS_END) || !Number.isInteger(ms)) return new Date(ms).toISOString();
  const milli = ms % 1000;
  const second = ms - milli;
  if (second === isoSeconds[0]) {
    isoOlder = 1;
    return isoPrefixes[0] + (MILLIS[milli] as string);
  }
  if (second === isoSeconds[1]) {
    isoOlder = 0;
    return isoPrefixes[1] + (MILLIS[milli] as string);
  }
  const slot = isoOlder;
  isoSeconds[slot] = second;
  isoPrefixes[slot] = new Date(second).toISOString().slice(0, 20);
  isoOlder = 1 - slot;
  return isoPrefixes[slot] + (MILLIS[milli] as string);
};

/** A Node timer as a TimerHandle (a method, not a closure per timer: requests start several). */
class NodeTimer implements TimerHandle {
  constructor(private readonly timer: ReturnType<typeof setTimeout>) {}
  cancel(): void {
    // Clears a timeout and an interval alike.
    clearTimeout(this.timer);
  }
}

/** Real time. Timers are unref'd: a pending timer alone never keeps the process alive. */
export const systemClock: Clock = {
  now: () => Date.now(),
  iso: () => toIso(Date.now()),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return new NodeTimer(t);
  },
  setInterval(fn, ms) {
    const t = setInterval(fn, ms);
    t.unref?.();
    return new NodeTimer(t);
  },
  sleep(ms, signal) {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const t = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(t);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  },
};

interface FakeTimer {
  id: number;
  at: number;
  fn: () => void;
  every: number | null;
}

const flushMicrotasks = async (rounds = 20) => {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
  await new Promise<void>((r) => setImmediate(r));
};

/**
 * A clock that only moves when told. `advance()` fires due timers in time order and lets
 * promise callbacks run between them, so code awaiting a timer resumes as it would for real.
 */
export class FakeClock implements Clock {
  private current: number;
  private timers: FakeTimer[] = [];
  private nextId = 1;

  constructor(start: number | string = "2026-11-21T12:00:00.000Z") {
    this.current = typeof start === "number" ? start : Date.parse(start);
  }

  now(): number {
    return this.current;
  }

  iso(): string {
    return toIso(this.current);
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    return this.add(fn, ms, null);
  }

  setInterval(fn: () => void, ms: number): TimerHandle {
    return this.add(fn, ms, Math.max(1, ms));
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const h = this.setTimeout(resolve, ms);
      signal?.addEventListener(
        "abort",
        () => {
          h.cancel();
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }

  /** Number of timers still scheduled. */
  pending(): number {
    return this.timers.length;
  }

  /** Milliseconds until the next timer fires, or null if none is scheduled. */
  nextDelay(): number | null {
    const next = this.earliest();
    return next ? next.at - this.current : null;
  }

  /** Move time forward by `ms`, firing every timer that falls due, in order. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    await flushMicrotasks();
    for (;;) {
      const next = this.earliest();
      if (!next || next.at > target) break;
      this.current = Math.max(this.current, next.at);
      if (next.every === null) this.timers = this.timers.filter((t) => t !== next);
      else next.at += next.every;
      next.fn();
      await flushMicrotasks();
    }
    this.current = target;
    await flushMicrotasks();
  }

  /** Set the time without firing timers (for modelling a stopped process or a skewed host). */
  set(ms: number | string): void {
    this.current = typeof ms === "number" ? ms : Date.parse(ms);
  }

  private add(fn: () => void, ms: number, every: number | null): TimerHandle {
    const timer: FakeTimer = { id: this.nextId++, at: this.current + Math.max(0, ms), fn, every };
    this.timers.push(timer);
    return { cancel: () => (this.timers = this.timers.filter((t) => t !== timer)) };
  }

  private earliest(): FakeTimer | undefined {
    let best: FakeTimer | undefined;
    for (const t of this.timers)
      if (!best || t.at < best.at || (t.at === best.at && t.id < best.id)) best = t;
    return best;
  }
}
