import type { Database, Kysely } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";

type Trx = Kysely<PlatformDB>;

/**
 * A write that merges with the other writes of its `kind` in the same batch: `apply` runs once
 * with every item's data (one multi-row statement instead of one statement per item). Merged
 * writes run before the batch's plain functions, so they must not depend on other items of the
 * batch (inserting new rows, deleting committed ones).
 */
export interface MergedWrite<T = unknown> {
  kind: string;
  data: T;
  apply(trx: Trx, data: T[]): Promise<void>;
  /**
   * On PostgreSQL `apply` is atomic by itself (one statement, or a transaction it opens when it
   * needs more): a batch of only this kind runs it without BEGIN/COMMIT, given the database as
   * `trx` (`trx.isTransaction` is false then).
   */
  oneStatement?: boolean;
}

/** What the `onTransaction` hook hears after each transaction the group commit ran. */
export interface TransactionInfo {
  /** Items written by it. */
  items: number;
  ok: boolean;
  /** A retry of one item alone after its batch failed. */
  alone: boolean;
}

export interface GroupCommitOptions {
  /** Items per transaction at most (default 256). */
  maxBatch?: number;
  /** Observes every transaction (tests count them, metrics can too). */
  onTransaction?: (t: TransactionInfo) => void;
  /**
   * A batch under load waits a window for more writes only when the last COMMIT (statement and
   * the wait until it was durable) took at least this long. Default: never. Neither backend's
   * commit blocks the event loop (kit syncs SQLite's WAL on the threadpool), so what arrives
   * while a commit is made durable joins the next batch by itself; a window only adds latency.
   */
  slowCommitMs?: number;
  /** The longest window (default MAX_WINDOW_MS). */
  maxWindowMs?: number;
  /**
   * Batches in flight at most: started and not yet durable (default 1). With 2 on SQLite the
   * next batch commits during the previous one's fsync (the write connection is free then) and
   * the fsyncs run back to back; but each batch then holds one event-loop turn of writes instead
   * of a whole fsync's, and the main thread paid for the extra transactions: the hello bench
   * did fewer requests/s at more CPU per request with 2 (README, Execution). Keep 1 on
   * PostgreSQL, where batches in flight together could hold row locks against each other.
   */
  pipeline?: number;
  /**
   * Real time on purpose, whatever clock the app runs on: the window is a throughput device,
   * not a domain deadline, and a frozen test clock must not stall writes.
   */
  now?: () => number;
  sleep?: (ms: number, wake: Promise<void>) => Promise<void>;
}

/** A window is four times the last COMMIT, at most this long. */
export const MAX_WINDOW_MS = 10;

const realSleep = (ms: number, wake: Promise<void>) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    void wake.then(() => {
      clearTimeout(t);
      resolve();
    });
  });

interface Item {
  fn: ((trx: Trx) => Promise<unknown>) | null;
  /** Resolve at COMMIT instead of once durable (see writeCommitted). */
  early: boolean;
  writes: readonly MergedWrite[];
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

/**
 * Group commit: writes handed in while a transaction runs are done together in the next one, so
 * N concurrent requests cost one commit (one fsync) instead of N, and same-kind writes become one
 * statement. When a batch fails, each item is retried alone, so one bad item fails only its own
 * caller.
 *
 * A batch first waits one turn of the event loop (setImmediate), which lets every request that
 * already arrived queue its write. A batch's transaction ends when its commit is durable: on
 * PostgreSQL the server's WAL flush, on SQLite kit's fdatasync of the WAL on the threadpool (the
 * write connection is free meanwhile). Either way the event loop keeps serving while a commit is
 * made durable, and what arrives meanwhile joins the next batch: one transaction and one fsync
 * per batch, never one per request (see `pipeline`). No timed window by default: with a fast
 * disk that timer only added latency (it cost the hello route much of its requests/s: README,
 * Execution).
 */
export class GroupCommit {
  /**
   * Counters since start: transactions run (batches and lone retries), items committed, failed
   * transactions, milliseconds spent in them, the part of that from the end of a batch's
   * statements until its commit was durable (COMMIT and the fsync wait), and the batches that
   * waited a timed window.
   */
  readonly stats = { transactions: 0, items: 0, failed: 0, commitMs: 0, commitStatementMs: 0, windows: 0 };
  private queue: Item[] = [];
  private running = false;
  /** Batches started whose commit is not durable yet, and the drain loop waiting for one. */
  private inFlight = 0;
  private slotFreed: (() => void) | null = null;
  private readonly pipeline: number;
  private readonly maxBatch: number;
  private readonly slowCommitMs: number;
  private readonly maxWindowMs: number;
  private readonly now: () => number;
  private readonly sleep: (ms: number, wake: Promise<void>) => Promise<void>;
  /** When the last batch ended, and how long its COMMIT statement took. */
  private lastEnd = Number.NEGATIVE_INFINITY;
  private lastCommitStatementMs = 0;
  private full: (() => void) | null = null;

  constructor(
    private readonly database: Database<PlatformDB>,
    private readonly opts: GroupCommitOptions = {},
  ) {
    this.maxBatch = opts.maxBatch ?? 256;
    this.slowCommitMs = opts.slowCommitMs ?? Number.POSITIVE_INFINITY;
    this.maxWindowMs = opts.maxWindowMs ?? MAX_WINDOW_MS;
    this.pipeline = Math.max(1, opts.pipeline ?? 1);
    this.now = opts.now ?? (() => performance.now());
    this.sleep = opts.sleep ?? realSleep;
  }

  /** Writes waiting for their transaction. */
  get pending(): number {
    return this.queue.length;
  }

  /** Run `fn` inside the next batch's transaction; resolves with its result once committed and durable. */
  run<T>(fn: (trx: Trx) => Promise<T>): Promise<T> {
    return this.enqueue(fn, [], false) as Promise<T>;
  }

  /** Merged writes (all or none of them, for this caller); resolves once committed and durable. */
  write(...writes: MergedWrite[]): Promise<void> {
    return this.enqueue(null, writes, false) as Promise<void>;
  }

  /**
   * `write` that resolves once its batch COMMITTED (visible, kept through a process crash), before
   * the commit is durable (kit's Database.writeTxCommitted; the same on PostgreSQL). Only for
   * writes nobody is told about: a later write's durable commit covers this one (SQLite's WAL is
   * appended in order), so whatever is acknowledged after such a write still implies it is on
   * disk. The batch still counts as in flight until durable (`pipeline`).
   */
  writeCommitted(...writes: MergedWrite[]): Promise<void> {
    return this.enqueue(null, writes, true) as Promise<void>;
  }

  private enqueue(fn: Item["fn"], writes: readonly MergedWrite[], early: boolean): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.queue.push({ fn, early, writes, resolve, reject });
      if (this.queue.length >= this.maxBatch) this.full?.();
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0) {
        if (this.inFlight >= this.pipeline) {
          await new Promise<void>((resolve) => {
            this.slotFreed = resolve;
          });
          continue;
        }
        // Let pending I/O (requests that already arrived) queue their writes first: without this
        // yield a write that arrives alone would commit alone even when more are on their way.
        await new Promise<void>((resolve) => setImmediate(resolve));
        const slow = this.lastCommitStatementMs >= this.slowCommitMs;
        const window = slow ? Math.min(this.maxWindowMs, 4 * this.lastCommitStatementMs) : 0;
        if (window > 0 && this.queue.length < this.maxBatch && this.now() - this.lastEnd < window) {
          this.stats.windows++;
          await this.sleep(
            window,
            new Promise<void>((resolve) => {
              this.full = resolve;
            }),
          );
        }
        this.full = null;
        this.inFlight++;
        void this.runBatch(this.queue.splice(0, this.maxBatch));
      }
    } finally {
      this.running = false;
    }
  }

  private async runBatch(batch: Item[]): Promise<void> {
    const started = this.now();
    let applied: number | null = null;
    try {
      await this.commit(batch, () => {
        applied = this.now();
      });
    } finally {
      this.lastEnd = this.now();
      // The statements' own work grows with the batch; the COMMIT is the fsync, a fixed cost.
      if (applied !== null) {
        this.lastCommitStatementMs = this.lastEnd - applied;
        this.stats.commitStatementMs += this.lastCommitStatementMs;
      }
      this.stats.commitMs += this.lastEnd - started;
      this.inFlight--;
      const freed = this.slotFreed;
      this.slotFreed = null;
      freed?.();
      if (this.queue.length > 0 && !this.running) void this.drain();
    }
  }

  private observe(t: TransactionInfo): void {
    this.stats.transactions++;
    if (t.ok) this.stats.items += t.items;
    else this.stats.failed++;
    this.opts.onTransaction?.(t);
  }

  /** `applied` is called when the batch's statements are done, right before COMMIT. */
  private async commit(batch: Item[], applied: () => void): Promise<void> {
    let results: unknown[];
    let durable: Promise<void>;
    try {
      ({ results, durable } = await this.transact(batch, applied));
    } catch (err) {
      this.observe({ items: batch.length, ok: false, alone: batch.length === 1 });
      if (batch.length === 1) {
        batch[0]?.reject(err);
        return;
      }
      for (const item of batch) {
        try {
          const alone = await this.transact([item], () => {});
          if (item.early) item.resolve(alone.results[0]);
          await alone.durable;
          this.observe({ items: 1, ok: true, alone: true });
          item.resolve(alone.results[0]);
        } catch (e) {
          this.observe({ items: 1, ok: false, alone: true });
          item.reject(e);
        }
      }
      return;
    }
    for (const [i, item] of batch.entries()) if (item.early) item.resolve(results[i]);
    try {
      await durable;
    } catch (err) {
      // Committed, not durable (a fatal WAL sync failure): nobody may be told it was written.
      this.observe({ items: batch.length, ok: false, alone: false });
      for (const item of batch) if (!item.early) item.reject(err);
      return;
    }
    this.observe({ items: batch.length, ok: true, alone: false });
    for (const [i, item] of batch.entries()) if (!item.early) item.resolve(results[i]);
  }

  /**
   * The batch in a transaction, or as its one statement alone (see MergedWrite.oneStatement):
   * resolves at COMMIT, with `durable` pending until the commit is on disk.
   */
  private async transact(
    batch: Item[],
    applied: () => void,
  ): Promise<{ results: unknown[]; durable: Promise<void> }> {
    const kind = batch[0]?.writes[0]?.kind;
    const alone =
      this.database.dialect.autocommitWrites &&
      batch.every(
        (i) => !i.fn && i.writes.length === 1 && i.writes[0]?.oneStatement && i.writes[0].kind === kind,
      );
    if (alone) {
      // PostgreSQL only: its commit is durable.
      const results = await this.apply(this.database.db, batch);
      applied();
      return { results, durable: Promise.resolve() };
    }
    const { value, durable } = await this.database.writeTxCommitted(async (trx) => {
      const r = await this.apply(trx, batch);
      applied();
      return r;
    });
    return { results: value, durable };
  }

  private async apply(trx: Trx, batch: Item[]): Promise<unknown[]> {
    const merged = new Map<string, { apply: MergedWrite["apply"]; data: unknown[] }>();
    for (const item of batch)
      for (const w of item.writes) {
        const g = merged.get(w.kind);
        if (g) g.data.push(w.data);
        else merged.set(w.kind, { apply: w.apply, data: [w.data] });
      }
    for (const g of merged.values()) await g.apply(trx, g.data);
    const out: unknown[] = [];
    for (const item of batch) out.push(item.fn ? await item.fn(trx) : undefined);
    return out;
  }
}
