import type { JobOutcome } from "./job.js";

/** One waiting request (see the inbox's register). Methods on a class: none of it is built per request. */
class Waiter {
  readonly result: Promise<JobOutcome | null>;
  settle: (o: JobOutcome | null) => void = noop;

  constructor(
    private readonly waiting: Map<string, Waiter>,
    readonly replyTo: string,
  ) {
    this.result = new Promise<JobOutcome | null>((resolve) => {
      this.settle = resolve;
    });
  }

  /** Stop waiting without a result (`result` stays pending). */
  drop(): void {
    this.waiting.delete(this.replyTo);
  }

  /** Give up: `result` resolves with null and a late outcome counts as abandoned. */
  expire(): void {
    if (this.waiting.delete(this.replyTo)) this.settle(null);
  }
}

function noop(): void {}

export type Inbox = ReturnType<typeof createInbox>;

/**
 * In-process inboxes of waiting synchronous requests. A request registers one, its outbox row
 * carries `reply_to`, and the dispatcher hands the run's outcome back here. Bounded: at the cap
 * register() returns null and the caller answers 503.
 */
export function createInbox(deps: { instanceId: string; capacity: number }) {
  const { instanceId, capacity } = deps;
  const waiting = new Map<string, Waiter>();
  /** Inbox ids only need to be unique within this instance (whose id is unique): a counter will do. */
  let seq = 0;
  return {
    instanceId,
    capacity,
    get size(): number {
      return waiting.size;
    },
    /**
     * A new waiter, or null at capacity. `replyTo` goes into the outbox row. `result` resolves with
     * the delivered outcome, or with null once `expire()` gave up waiting (the waiter is dropped
     * then, so a late outcome counts as abandoned); `drop()` leaves `result` pending.
     */
    register(): { replyTo: string; result: Promise<JobOutcome | null>; drop(): void; expire(): void } | null {
      if (waiting.size >= capacity) return null;
      const replyTo = `${instanceId}/${(++seq).toString(36)}`;
      const waiter = new Waiter(waiting, replyTo);
      waiting.set(replyTo, waiter);
      return waiter;
    },
    /** Hand an outcome to its waiter; false when nobody waits any more (the result is abandoned). */
    deliver(replyTo: string, outcome: JobOutcome): boolean {
      const waiter = waiting.get(replyTo);
      if (!waiter) return false;
      waiting.delete(replyTo);
      waiter.settle(outcome);
      return true;
    },
  };
}
