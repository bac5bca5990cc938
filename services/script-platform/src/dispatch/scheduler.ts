/**
 * The dispatcher's slot policy, without I/O: how many runs may hold a slot, which share of them
 * background runs (claimed rows, triggered runs) may take, which waiting sync request gets the next
 * free slot, when a claim runs, how big it is, when it waits for more runs to end, and what a claim
 * that returns gives back. Events in (a sync request arrives, a run ends, a claim returns, a timer
 * fires), decisions out (run now, wait, grant these waiters, claim n, give back m). It holds no
 * timer: a decision that needs one names its delay, and the shell reports when it elapsed.
 * `dispatcher.ts` is the shell doing the database and executor work around it.
 */

export interface SchedulerOptions {
  /** PLATFORM_MAX_CONCURRENCY: runs holding a slot at once, claims in flight included. */
  max: number;
  /** Of max, the slots background runs may not take (default: a quarter, rounded down). */
  syncSlots?: number;
  /** How long a sync request finding every slot taken waits for one (0: it never waits). */
  syncWaitMs?: number;
}

/** Rows claimed by one statement at most. */
export const CLAIM_BATCH = 32;
/**
 * While this many runs are in flight, a claim waits until as many slots are free: under a
 * backlog every finishing run would otherwise claim its one replacement (a statement, and a
 * script read, per run on PostgreSQL). A deferred claim still happens within CLAIM_DEFER_MS.
 */
const CLAIM_MIN = 8;
export const CLAIM_DEFER_MS = 10;
/** Share of max kept for sync requests by default (rounded down: none below 4 slots). */
const SYNC_SHARE = 0.25;

/** A sync request's slot: run now, wait (the shell arms a timer of `ms`), or go in unclaimed. */
export type SyncDecision = { kind: "run" } | { kind: "wait"; id: number; ms: number } | { kind: "unclaimed" };

/** After a slot freed: waiting sync requests granted one (oldest first), and whether to wake the claimer. */
export interface Freed {
  grant: number[];
  wake: boolean;
}

/** What the claim loop does next. */
export type ClaimStep =
  | { kind: "claim"; want: number; cancelDefer: boolean }
  /** Enough runs in flight: wait for them (arm a timer of `ms` when `arm`; deferElapsed when it fires). */
  | { kind: "defer"; arm: boolean; ms: number }
  | { kind: "none" };

/** A returned claim: run the first `keep` rows, give back the rest, grant these waiters. */
export interface ClaimResult {
  keep: number;
  giveBack: number;
  grant: number[];
}

/** A class: plain state and its transitions, no collaborators (the shell reads its counters). */
export class SlotScheduler {
  readonly max: number;
  /** Slots background runs may hold (claims in flight included): the rest stay for sync requests. */
  readonly backgroundMax: number;
  /** Slots a claim waits for while at least as many runs are in flight (small pools: 1). */
  readonly claimMin: number;
  readonly syncWaitMs: number;
  /** Runs holding a slot (sync and background). */
  running = 0;
  /**
   * Of `running`, the runs nobody waits for (claimed rows, triggered runs written claimed). They
   * may hold at most `backgroundMax` slots: without that, a steady backlog of triggered runs held
   * every slot and each sync request queued behind the whole backlog.
   */
  background = 0;
  /**
   * Slots the claim in flight may fill, not counted in `running` until it returns. A sync request
   * arriving meanwhile takes one of them (it is waited on; a backlog row is not), and the claim
   * gives back the rows it got beyond the slots it still has.
   */
  claiming = 0;
  /** Slots the outbox writer took whose rows are neither started nor given back yet. */
  reserved = 0;
  stopped = true;
  /** Sync requests waiting for a slot, oldest first: a slot that frees goes to them before any claim. */
  private readonly waiters: number[] = [];
  private nextWaiter = 1;
  /** Whether due rows may be waiting for a free slot (set by every wake-up, cleared by a short claim). */
  private backlog = true;
  /** A wake-up arrived while the claim loop ran: it goes round once more. */
  private again = false;
  /** The claim loop is running (a claim, or the scripts read after it, in flight). */
  private ticking = false;
  private deferPending = false;
  private force = false;

  constructor(opts: SchedulerOptions) {
    this.max = opts.max;
    this.backgroundMax = Math.max(1, opts.max - (opts.syncSlots ?? Math.floor(opts.max * SYNC_SHARE)));
    this.claimMin = Math.max(1, Math.min(CLAIM_MIN, Math.floor(opts.max / 4)));
    this.syncWaitMs = opts.syncWaitMs ?? 0;
  }

  get free(): number {
    return this.max - this.running - this.claiming;
  }
  /** Slots a claim or the outbox writer may take for background runs now. */
  get freeForBackground(): number {
    return Math.min(this.free, this.backgroundMax - this.background - this.claiming);
  }
  get waiting(): number {
    return this.waiters.length;
  }

  start(): void {
    this.stopped = false;
  }
  /** Stopping: every waiting sync request is refused (the shell sends it the unclaimed way). */
  stop(): number[] {
    this.stopped = true;
    this.deferPending = false;
    return this.waiters.splice(0);
  }

  /** Give free slots to waiting sync requests, oldest first. */
  private handOff(): number[] {
    const grant: number[] = [];
    while (this.waiters.length > 0 && this.free > 0) {
      this.running++;
      grant.push(this.waiters.shift() as number);
    }
    return grant;
  }
  private freed(): Freed {
    const grant = this.handOff();
    // A freed slot left over needs a claim only when rows may be waiting for one.
    return { grant, wake: this.free > 0 && this.backlog };
  }

  /**
   * A sync request arrives: it runs at once while a slot is free, counting those a claim in flight
   * has not filled yet and those background runs may not take; else it waits for the next slot.
   */
  syncArrives(): SyncDecision {
    if (!this.stopped && this.running < this.max) {
      if (this.free <= 0) this.claiming--; // a slot the claim in flight had not filled yet
      this.running++;
      return { kind: "run" };
    }
    if (!this.stopped && this.syncWaitMs > 0) {
      const id = this.nextWaiter++;
      this.waiters.push(id);
      return { kind: "wait", id, ms: this.syncWaitMs };
    }
    return { kind: "unclaimed" };
  }
  /** A waiting sync request's wait ran out: true when it was still waiting (now refused). */
  syncWaitExpired(id: number): boolean {
    const i = this.waiters.indexOf(id);
    if (i < 0) return false;
    this.waiters.splice(i, 1);
    return true;
  }
  /** A run ended (or a sync request's insert failed before its run): its slot frees. */
  runEnded(sync: boolean): Freed {
    this.running--;
    if (!sync) this.background--;
    return this.freed();
  }
  /** Background rows this process holds but will not run (stopping, or beyond the free slots). */
  givenBack(n: number): number[] {
    this.running -= n;
    this.background -= n;
    return this.handOff();
  }

  /** A wake-up (timer, enqueue, NOTIFY, a freed slot): true when the shell starts the claim loop now. */
  wake(): boolean {
    if (this.stopped) return false;
    this.backlog = true;
    if (this.ticking) {
      this.again = true;
      return false;
    }
    this.ticking = true;
    return true;
  }
  /** The claim loop's next step. */
  nextClaim(): ClaimStep {
    this.again = false;
    const want = Math.min(this.freeForBackground, CLAIM_BATCH);
    if (want <= 0 || this.stopped) {
      this.backlog = true;
      return { kind: "none" };
    }
    if (want < this.claimMin && this.background >= this.claimMin && !this.force) {
      // Enough runs in flight: their ends bring more free slots; the timer bounds the wait.
      this.backlog = true;
      const arm = !this.deferPending;
      this.deferPending = true;
      return { kind: "defer", arm, ms: CLAIM_DEFER_MS };
    }
    this.force = false;
    const cancelDefer = this.deferPending;
    this.deferPending = false;
    this.claiming = want;
    return { kind: "claim", want, cancelDefer };
  }
  /** The deferral's timer fired: the next claim goes ahead whatever is in flight (the shell wakes). */
  deferElapsed(): void {
    this.deferPending = false;
    this.force = true;
  }
  /** The claim of `want` rows returned `got`, or failed (`got` 0, `failed`). */
  claimReturned(want: number, got: number, failed = false): ClaimResult {
    // What is free now: sync requests may have taken some of the claim's slots, runs may have ended.
    const slots = Math.max(
      0,
      Math.min(this.max - this.running - this.waiters.length, this.backgroundMax - this.background),
    );
    this.claiming = 0;
    const keep = Math.min(got, slots);
    this.running += keep;
    this.background += keep;
    // Slots the claim left free go to sync requests that waited meanwhile.
    const grant = this.handOff();
    if (!failed) {
      this.backlog = got === want;
      if (this.backlog) this.again = true;
    }
    return { keep, giveBack: got - keep, grant };
  }
  /** Whether the claim loop goes round once more. */
  get claimAgain(): boolean {
    return this.again && !this.stopped;
  }
  /** The claim loop ended: true when a wake-up arrived as it was finishing (the shell wakes again). */
  claimLoopEnded(): boolean {
    this.ticking = false;
    return this.again;
  }

  /** The outbox writer asks for up to n slots for runs it writes claimed by this process. */
  reserve(n: number): number {
    if (this.stopped) return 0;
    const k = Math.max(0, Math.min(n, this.freeForBackground));
    this.running += k;
    this.background += k;
    this.reserved += k;
    return k;
  }
  /** Reserved slots whose rows were not written after all. */
  unreserve(n: number): Freed {
    this.running -= n;
    this.background -= n;
    this.reserved -= n;
    return this.freed();
  }
  /** Reserved slots whose rows were written: they start (or are given back) now. */
  reservedWritten(n: number): void {
    this.reserved -= n;
  }
}
