import type { JobOutcome } from "./job.js";

/**
 * In-process inboxes of waiting synchronous requests. A request registers one, its outbox row
 * carries `reply_to`, and the dispatcher hands the run's outcome back here. Bounded: at the cap
 * register() returns null and the caller answers 503.
 */
export class Inbox {
  private readonly waiting = new Map<string, (o: JobOutcome | null) => void>();
  /** Inbox ids only need to be unique within this instance (whose id is unique): a counter will do. */
  private seq = 0;

  constructor(
    readonly instanceId: string,
    readonly capacity: number,
  ) {}

  get size(): number {
    return this.waiting.size;
  }

  /**
   * A new waiter, or null at capacity. `replyTo` goes into the outbox row. `result` resolves with
   * the delivered outcome, or with null once `expire()` gave up waiting (the waiter is dropped
   * then, so a late outcome counts as abandoned); `drop()` leaves `result` pending.
   */
  register(): { replyTo: string; result: Promise<JobOutcome | null>; drop(): void; expire(): void } | null {
    if (this.waiting.size >= this.capacity) return null;
    const replyTo = `${this.instanceId}/${(++this.seq).toString(36)}`;
    let settle: (o: JobOutcome | null) => void = () => {};
    const result = new Promise<JobOutcome | null>((resolve) => {
      settle = resolve;
    });
    this.waiting.set(replyTo, settle);
    return {
      replyTo,
      result,
      drop: () => void this.waiting.delete(replyTo),
      expire: () => {
        if (this.waiting.delete(replyTo)) settle(null);
      },
    };
  }

  /** Hand an outcome to its waiter; false when nobody waits any more (the result is abandoned). */
  deliver(replyTo: string, outcome: JobOutcome): boolean {
    const resolve = this.waiting.get(replyTo);
    if (!resolve) return false;
    this.waiting.delete(replyTo);
    resolve(outcome);
    return true;
  }
}
