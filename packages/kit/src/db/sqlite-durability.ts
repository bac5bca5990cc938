import { type FileHandle, open } from "node:fs/promises";
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/**
 * Durable SQLite commits without blocking the event loop.
 *
 * Connections run `synchronous = NORMAL` in WAL mode: a COMMIT appends its frames to `<file>-wal`
 * (into the OS page cache) and returns without an fsync. Before a write is acknowledged, the kit
 * waits for an fdatasync of that WAL file that started after the COMMIT returned; it runs on the
 * libuv threadpool (Linux syncs per inode, so it covers what better-sqlite3 wrote through its own
 * descriptor). Commits that land while a sync is in flight share the next one (group fsync).
 *
 * Readers may see a commit up to one fsync before it is durable; only a power loss (not a process
 * crash: the frames are in the page cache once COMMIT returns) can lose such a commit, and then
 * no caller had been told it was written.
 */

/** The WAL could not be synced: durability is lost until the process restarts. */
export class DurabilityError extends Error {
  constructor(readonly code: string) {
    super(
      `SQLite could not make writes durable (fsync of the write-ahead log failed: ${code}); every write fails until the service restarts`,
    );
    this.name = "DurabilityError";
  }
}

export interface WalSyncOptions {
  /**
   * Syncs the WAL to disk (tests inject one they control). Default: fdatasync on a descriptor of
   * `<file>-wal` opened by the kit, on the libuv threadpool.
   */
  sync?: () => Promise<void>;
  /** Hears the failure once (error level), without paths. */
  onFatal?: (err: DurabilityError, cause: unknown) => void;
}

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
  reject: (e: unknown) => void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Live counters (read by the bench and tests). */
export interface WalSyncStats {
  /** Callers that waited for durability (one per commit or autocommit write). */
  waits: number;
  /** fdatasync calls started. */
  syncs: number;
  /** Milliseconds they took in all. */
  syncMs: number;
}

/**
 * Group fsync of one SQLite WAL file: at most one sync in flight; callers that arrive while it
 * runs wait for the next one, started as soon as the current one completes.
 *
 * A failed sync is fatal (PostgreSQL's "fsyncgate": a retried fsync can report success after the
 * kernel dropped the dirty pages): it fails every caller waiting on it and every later one.
 */
export class WalSync {
  readonly stats: WalSyncStats = { waits: 0, syncs: 0, syncMs: 0 };
  private inFlight: Promise<void> | null = null;
  private next: Deferred | null = null;
  private fatal: DurabilityError | null = null;
  private file: FileHandle | null = null;
  private readonly sync: () => Promise<void>;

  constructor(
    private readonly walPath: string,
    private readonly opts: WalSyncOptions = {},
  ) {
    this.sync = opts.sync ?? (() => this.fdatasync());
  }

  /** Set once a sync failed: every write must fail from then on. */
  get failure(): DurabilityError | null {
    return this.fatal;
  }

  /** Resolves once a sync of the WAL that started after this call has completed. */
  durable(): Promise<void> {
    if (this.fatal) return Promise.reject(this.fatal);
    this.stats.waits++;
    if (!this.next) this.next = deferred();
    const waiting = this.next.promise;
    if (!this.inFlight) this.flush();
    return waiting;
  }

  /** Waits for the syncs under way and closes the descriptor. */
  async close(): Promise<void> {
    while (this.inFlight) await this.inFlight.catch(() => {});
    await this.file?.close().catch(() => {});
    this.file = null;
  }

  private flush(): void {
    const batch = this.next;
    if (!batch) return;
    this.next = null;
    this.stats.syncs++;
    const t0 = performance.now();
    this.inFlight = this.sync().then(
      () => {
        this.stats.syncMs += performance.now() - t0;
        this.inFlight = null;
        batch.resolve();
        this.flush();
      },
      (cause: unknown) => {
        this.inFlight = null;
        const err = this.fail(cause);
        batch.reject(err);
        this.next?.reject(err);
        this.next = null;
      },
    );
  }

  private fail(cause: unknown): DurabilityError {
    if (this.fatal) return this.fatal;
    const code = (cause as { code?: unknown })?.code;
    this.fatal = new DurabilityError(typeof code === "string" ? code : "unknown error");
    this.opts.onFatal?.(this.fatal, cause);
    return this.fatal;
  }

  private async fdatasync(): Promise<void> {
    if (!this.file) {
      try {
        // Read-only is enough to sync; the WAL exists once a transaction wrote to it.
        this.file = await open(this.walPath, "r");
      } catch (err) {
        // No WAL yet: nothing was written to it, so there is nothing to make durable.
        if ((err as { code?: string }).code === "ENOENT") return;
        throw err;
      }
    }
    await this.file.datasync();
  }
}

export interface CheckpointerOptions {
  /**
   * The shortest pause between the worker's checkpoints (default 50 ms). The pause adapts so that
   * a checkpoint copies about 1000 frames (SQLite's auto-checkpoint size): each one costs two
   * fsyncs (WAL and database), which compete with the commits' syncs for the disk. At most 1 s.
   */
  intervalMs?: number;
  /**
   * A WAL this many frames long (default 2000) has not started over for a while: the next
   * checkpoint runs while `exclusive` holds the write connection, so it completes and the next
   * writer starts the WAL over.
   */
  restartFrames?: number;
  /** Runs `fn` while this process's writes wait (the kit holds the write connection). */
  exclusive: (fn: () => Promise<void>) => Promise<void>;
  /** The worker failed or exited: the caller turns auto-checkpoints back on. */
  onFailure: (err: unknown) => void;
}

export interface CheckpointStats {
  /** Checkpoints that copied frames. */
  checkpoints: number;
  /** Frames copied. */
  frames: number;
  /** Milliseconds the worker spent checkpointing (none of it on the main thread). */
  ms: number;
  /** Checkpoints run while writes waited, so that the WAL starts over (see restartFrames). */
  restarts: number;
}

interface CheckpointReport {
  frames?: number;
  ms?: number;
  /** Frames in the WAL since it last started over. */
  log?: number;
  now?: boolean;
  error?: string;
  stopped?: boolean;
}

const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const SQLite = require(workerData.driver);
const db = new SQLite(workerData.file, { fileMustExist: true });
db.pragma("busy_timeout = 5000");
db.pragma("synchronous = NORMAL");
const check = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
let done = 0;
let pause = workerData.intervalMs;
function checkpoint(now) {
  try {
    const t0 = performance.now();
    const r = check.get();
    // Frames checkpointed count from the WAL's last start.
    const frames = r.checkpointed < done ? r.checkpointed : r.checkpointed - done;
    done = r.checkpointed;
    parentPort.postMessage({ frames, ms: performance.now() - t0, log: r.log, now });
    return frames;
  } catch (err) {
    parentPort.postMessage({ error: String((err && err.code) || err), now });
    return 0;
  }
}
let timer;
function next() {
  timer = setTimeout(() => {
    const frames = checkpoint(false);
    // About 1000 frames per checkpoint at the current write rate; the pause at most doubles
    // (a checkpoint right after the WAL started over sees few frames, not a slow rate).
    const aim = frames > 0 ? (pause * 1000) / frames : pause * 2;
    pause = Math.min(1000, 2 * pause, Math.max(workerData.intervalMs, aim));
    next();
  }, pause);
}
next();
parentPort.on("message", (m) => {
  if (m === "now") return checkpoint(true);
  if (m !== "stop") return;
  clearTimeout(timer);
  try {
    db.pragma("wal_checkpoint(TRUNCATE)");
  } catch {}
  db.close();
  parentPort.postMessage({ stopped: true });
});
`;

/**
 * Checkpoints a WAL database from a worker thread with its own connection, so the checkpoint's
 * page copying and its fsyncs of WAL and database stay off the event loop (the write connection
 * runs with `wal_autocheckpoint = 0`).
 *
 * PASSIVE about every 1000 frames: it never waits for writers or readers, so it stalls no one.
 * But under a steady load a write lands during nearly every checkpoint, the WAL is never fully
 * checkpointed when the next write starts, and SQLite keeps appending instead of starting the
 * WAL over: the file grows without bound, and an fdatasync of a growing file also commits its
 * size (several times slower than rewriting in place: kit README). So once the WAL holds `restartFrames`, the
 * next checkpoint runs while this process's writes wait (asynchronously: the event loop keeps
 * serving); it only copies what came since the last one, and the next writer starts the WAL over.
 * TRUNCATE when stopped.
 */
export class Checkpointer {
  readonly stats: CheckpointStats = { checkpoints: 0, frames: 0, ms: 0, restarts: 0 };
  private readonly worker: Worker;
  private stopped: Promise<void> | null = null;
  private failed = false;
  private restarting = false;
  private readonly nowWaiters: (() => void)[] = [];

  constructor(file: string, opts: CheckpointerOptions) {
    const driver = createRequire(import.meta.url).resolve("better-sqlite3");
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { file, driver, intervalMs: opts.intervalMs ?? 50 },
    });
    // The worker must not keep a process alive that is otherwise done.
    this.worker.unref();
    const restartFrames = opts.restartFrames ?? 2000;
    const failure = (err: unknown) => {
      this.settleNow();
      if (this.failed || this.stopped) return;
      this.failed = true;
      opts.onFailure(err);
    };
    this.worker.on("message", (m: CheckpointReport) => {
      if (m.now) this.nowWaiters.shift()?.();
      if (m.error) return failure(new Error(`checkpoint failed: ${m.error}`));
      if (m.frames) {
        this.stats.checkpoints++;
        this.stats.frames += m.frames;
        this.stats.ms += m.ms ?? 0;
      }
      if (!m.now && (m.log ?? 0) >= restartFrames && !this.restarting && !this.stopped) {
        this.restarting = true;
        this.stats.restarts++;
        opts
          .exclusive(() => this.checkpointNow())
          .catch(() => {}) // the write connection was busy past its timeout: the next report retries
          .finally(() => {
            this.restarting = false;
          });
      }
    });
    this.worker.on("error", failure);
    this.worker.on("exit", (code) => failure(new Error(`checkpoint worker exited (${code})`)));
  }

  /** Stops the timer, truncates the WAL (when no other connection reads it) and ends the worker. */
  stop(): Promise<void> {
    if (this.stopped) return this.stopped;
    this.stopped = this.failed
      ? this.worker.terminate().then(() => {})
      : new Promise<void>((resolve) => {
          this.worker.once("exit", () => resolve());
          this.worker.on("message", (m: CheckpointReport) => {
            if (m.stopped) void this.worker.terminate();
          });
          this.worker.postMessage("stop");
        });
    return this.stopped;
  }

  private checkpointNow(): Promise<void> {
    if (this.failed || this.stopped) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.nowWaiters.push(resolve);
      this.worker.postMessage("now");
    });
  }

  /** A worker that ended answers no more: release whoever waits for it. */
  private settleNow(): void {
    for (const w of this.nowWaiters.splice(0)) w();
  }
}
