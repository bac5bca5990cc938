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

export type GroupCommit = ReturnType<typeof createGroupCommit>;

export interface GroupCommitDeps extends GroupCommitOptions {
  database: Database<PlatformDB>;
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
export function createGroupCommit(deps: GroupCommitDeps) {
  const { database } = deps;
  /**
   * Counters since start: transactions run (batches and lone retries), items committed, failed
   * transactions, milliseconds spent in them, the part of that from the end of a batch's
   * statements until its commit was durable (COMMIT and the fsync wait), and the batches that
   * waited a timed window.
   */
  const stats = { transactions: 0, items: 0, failed: 0, commitMs: 0, commitStatementMs: 0, windows: 0 };
  const queue: Item[] = [];
  let running = false;
  /** Batches started whose commit is not durable yet, and the drain loop waiting for one. */
  let inFlight = 0;
  let slotFreed: (() => void) | null = null;
  const pipeline = Math.max(1, deps.pipeline ?? 1);
  const maxBatch = deps.maxBatch ?? 256;
  const slowCommitMs = deps.slowCommitMs ?? Number.POSITIVE_INFINITY;
  const maxWindowMs = deps.maxWindowMs ?? MAX_WINDOW_MS;
  const now = deps.now ?? (() => performance.now());
  const sleep = deps.sleep ?? realSleep;
  /** When the last batch ended, and how long its COMMIT statement took. */
  let lastEnd = Number.NEGATIVE_INFINITY;
  let lastCommitStatementMs = 0;
  let full: (() => void) | null = null;

  function enqueue(fn: Item["fn"], writes: readonly MergedWrite[], early: boolean): Promise<unknown> {
    return new Promise((resolve, reject) => {
      queue.push({ fn, early, writes, resolve, reject });
      if (queue.length >= maxBatch) full?.();
      if (!running) void drain();
    });
  }

  async function drain(): Promise<void> {
    running = true;
    try {
      while (queue.length > 0) {
        if (inFlight >= pipeline) {
          await new Promise<void>((resolve) => {
            slotFreed = resolve;
          });
          continue;
        }
        // Let pending I/O (requests that already arrived) queue their writes first: without this
        // yield a write that arrives alone would commit alone even when more are on their way.
        await new Promise<void>((resolve) => setImmediate(resolve));
        const slow = lastCommitStatementMs >= slowCommitMs;
        const window = slow ? Math.min(maxWindowMs, 4 * lastCommitStatementMs) : 0;
        if (window > 0 && queue.length < maxBatch && now() - lastEnd < window) {
          stats.windows++;
          await sleep(
            window,
            new Promise<void>((resolve) => {
              full = resolve;
            }),
          );
        }
        full = null;
        inFlight++;
        void runBatch(queue.splice(0, maxBatch));
      }
    } finally {
      running = false;
    }
  }

  async function runBatch(batch: Item[]): Promise<void> {
    const started = now();
    let applied: number | null = null;
    try {
      await commit(batch, () => {
        applied = now();
      });
    } finally {
      lastEnd = now();
      // The statements' own work grows with the batch; the COMMIT is the fsync, a fixed cost.
      if (applied !== null) {
        lastCommitStatementMs = lastEnd - applied;
        stats.commitStatementMs += lastCommitStatementMs;
      }
      stats.commitMs += lastEnd - started;
      inFlight--;
      const freed = slotFreed;
      slotFreed = null;
      freed?.();
      if (queue.length > 0 && !running) void drain();
    }
  }

  function observe(t: TransactionInfo): void {
    stats.transactions++;
    if (t.ok) stats.items += t.items;
    else stats.failed++;
    deps.onTransaction?.(t);
  }

  /** `applied` is called when the batch's statements are done, right before COMMIT. */
  async function commit(batch: Item[], applied: () => void): Promise<void> {
    let results: unknown[];
    let durable: Promise<void>;
    try {
      ({ results, durable } = await transact(batch, applied));
    } catch (err) {
      observe({ items: batch.length, ok: false, alone: batch.length === 1 });
      if (batch.length === 1) {
        batch[0]?.reject(err);
        return;
      }
      for (const item of batch) {
        try {
          const alone = await transact([item], () => {});
          if (item.early) item.resolve(alone.results[0]);
          await alone.durable;
          observe({ items: 1, ok: true, alone: true });
          item.resolve(alone.results[0]);
        } catch (e) {
          observe({ items: 1, ok: false, alone: true });
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
      observe({ items: batch.length, ok: false, alone: false });
      for (const item of batch) if (!item.early) item.reject(err);
      return;
    }
    observe({ items: batch.length, ok: true, alone: false });
    for (const [i, item] of batch.entries()) if (!item.early) item.resolve(results[i]);
  }

  /**
   * The batch in a transaction, or as its one statement alone (see MergedWrite.oneStatement):
   * resolves at COMMIT, with `durable` pending until the commit is on disk.
   */
  async function transact(
    batch: Item[],
    applied: () => void,
  ): Promise<{ results: unknown[]; durable: Promise<void> }> {
    const kind = batch[0]?.writes[0]?.kind;
    const alone =
      database.dialect.autocommitWrites &&
      batch.every(
        (i) => !i.fn && i.writes.length === 1 && i.writes[0]?.oneStatement && i.writes[0].kind === kind,
      );
    if (alone) {
      // PostgreSQL only: its commit is durable.
      const results = await apply(database.db, batch);
      applied();
      return { results, durable: Promise.resolve() };
    }
    const { value, durable } = await database.writeTxCommitted(async (trx) => {
      const r = await apply(trx, batch);
      applied();
      return r;
    });
    return { results: value, durable };
  }

  async function apply(trx: Trx, batch: Item[]): Promise<unknown[]> {
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

  return {
    stats,
    /** Writes waiting for their transaction. */
    get pending(): number {
      return queue.length;
    },
    /** Run `fn` inside the next batch's transaction; resolves with its result once committed and durable. */
    run<T>(fn: (trx: Trx) => Promise<T>): Promise<T> {
      return enqueue(fn, [], false) as Promise<T>;
    },
    /** Merged writes (all or none of them, for this caller); resolves once committed and durable. */
    write(...writes: MergedWrite[]): Promise<void> {
      return enqueue(null, writes, false) as Promise<void>;
    },
    /**
     * `write` that resolves once its batch COMMITTED (visible, kept through a process crash), before
     * the commit is durable (kit's Database.writeTxCommitted; the same on PostgreSQL). Only for
     * writes nobody is told about: a later write's durable commit covers this one (SQLite's WAL is
     * appended in order), so whatever is acknowledged after such a write still implies it is on
     * disk. The batch still counts as in flight until durable (`pipeline`).
     */
    writeCommitted(...writes: MergedWrite[]): Promise<void> {
      return enqueue(null, writes, true) as Promise<void>;
    },
  };
}
