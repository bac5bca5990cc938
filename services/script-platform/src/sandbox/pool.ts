import { fileURLToPath, pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import type { Clock, TimerHandle } from "@app/kit/clock";
import type { Logger } from "@app/kit/logger";
import { SizeLimitError } from "./boundary.js";
import {
  type FailureKind,
  type HostCall,
  limitMessage,
  RUN_ENDED,
  type RunOutcome,
  ScriptVisibleError,
} from "./engine.js";
import type { RunLimits } from "./limits.js";
import { Lru } from "./lru.js";
import { compileQuickJS } from "./quickjs.js";
import { CELL_CANCELLED, CELL_WAITING, cellValue, moveCell } from "./run-cells.js";
import { SignalWatch } from "./signal-watch.js";
import type { FromWorker, FromWorkerPost, ToWorker, WireError, WorkerData, WorkerRun } from "./worker.js";

/**
 * The pool of sandbox worker threads. Each worker loads its own QuickJS WebAssembly module and
 * executes one script at a time, while any number of its app's runs wait parked (see Parked runs); the main thread keeps HTTP, the database and the outbox, and answers
 * the workers' SDK calls. Written by hand rather than with piscina: a run here is a conversation
 * (SDK calls flow back while it runs), runs prefer the worker that served the same script
 * version before, and the watchdog must terminate the one worker whose run overstayed; piscina's
 * task model gives none of the three without working around it.
 *
 * Guarantees:
 * - a run answers by its deadline + `graceMs` even when its worker is stuck inside one native
 *   call: the watchdog terminates that worker (freeing its WASM memory) and starts a replacement;
 * - at most `appConcurrency` runs of one app executing at once, so one app never holds every
 *   worker; other runs wait in FIFO order (at most `appQueue` with a wait bound), and a run with
 *   `waitMs` during which no run of its app started fails as `busy`;
 * - at most `sdkCallsInFlight` SDK calls pending per run and `sdkCallsPerRun` in total: beyond
 *   them the call rejects inside the script with a catchable error (`code` sdk_busy / sdk_limit);
 * - a worker whose WASM module aborted, or whose memory grew past `recycleWasmBytes` (WASM memory
 *   never shrinks), is replaced after its run, so memory a script forced up returns.
 *
 * Pipelining: a run that cannot start because its app is at its cap (or every worker is busy) may
 * be handed ahead of time to a worker running the same app, up to `PIPELINE_DEPTH` per worker; the
 * worker starts it the moment the current run ends, without waiting for the main thread's turn
 * (on a loaded main thread that turn, not the script, bounded one app's runs/s). It stays serial
 * (one run per worker), so the cap still counts runs executing at once. Only runs that no other
 * app's run is waiting ahead of are handed on (FIFO fairness between apps). A handed-on run keeps
 * its wait bound: if it has not started when the bound expires it is withdrawn (shared cell, see
 * worker.ts) and fails as busy. Its watchdog starts when the main thread learns it started (the
 * "done" of the run before it), so a stuck native call's overshoot grows by at most that lag.
 * Runs handed to a worker that ends or is replaced before starting them go back to the queue's
 * front; they never reached the main thread's SDK (their calls would come after the "done").
 */
/*
 * Parked runs: a run waiting on an SDK call, `fetch` or a timer tells the pool once ("parked"); it
 * then no longer counts against its app's cap, and its worker starts the next run (handed on, or
 * assigned as to an idle worker) whenever none of its runs executes JavaScript. Each run has its
 * own QuickJS context: QuickJS runs every promise job of a runtime together, so two runs sharing
 * one could act with each other's capability. A worker holding parked runs takes runs of their
 * app only (a context never serves another app), at most PARKED_PER_WORKER. The watchdog still
 * guards each run: a run stuck past its deadline terminates its worker, and the runs parked in it
 * are lost with it (internal_error, as when a worker crashes). A worker that outgrew its memory
 * bound with runs parked starts nothing more and is replaced once they ended.
 */
export interface PoolOptions {
  workers: number;
  /** Runs of one app executing at once (parked runs do not count). */
  appConcurrency: number;
  /** Runs of one app with a wait bound (sync requests) waiting at most; beyond it busy at once. */
  appQueue?: number;
  sdkCallsInFlight: number;
  sdkCallsPerRun: number;
  clock: Clock;
  logger: Logger;
  /** Watchdog slack past a run's own deadline (the worker's interrupt handler normally ends it first). */
  graceMs?: number;
  /** Replace a worker after a run that left its WASM memory above this. */
  recycleWasmBytes?: number;
  /**
   * Workers started on demand beyond `workers` (see Spare workers below); 0: none.
   */
  spareWorkers?: number;
  /** A spare worker idle this long stops. */
  spareIdleMs?: number;
  /** Blank contexts each worker builds while idle (worker.ts stockUp); default BLANK_CONTEXTS_PER_WORKER. */
  blankContexts?: number;
}

/**
 * Spare workers: a run of an app below its cap that finds every worker taken (by other apps'
 * runs, e.g. hogs spinning to their timeout) starts one more worker, up to `spareWorkers` beyond
 * `workers`; a spare stops once idle for `spareIdleMs`. With the per-app cap counted on the
 * base workers, K apps each running a hog hold K workers and another app still gets one of its
 * own (the OS shares the cores between the threads), while a burst of one app keeps to its cap and
 * starts nothing. Spares are started lazily, so an idle or single-app instance pays nothing.
 */
export const DEFAULT_SPARE_IDLE_MS = 30_000;

export interface PoolRun {
  appId: string;
  /** Warm-context affinity: (app, script id, version); null for runs that must not be cached (drafts). */
  key: string | null;
  name: string;
  source: string;
  modules: ReadonlyMap<string, string>;
  ctx: unknown;
  /**
   * The ctx as JSON text holding no bytes (then `ctx` is not sent): one string is far cheaper to
   * clone to a worker than an object graph, and the worker hands it to the guest as it is.
   */
  ctxJson?: string;
  limits: RunLimits;
  host: HostCall;
  /** Aborting ends the run at once (shutdown): it fails as internal_error. */
  signal?: AbortSignal;
  /** How long the run may wait for a slot (its app's cap, a free worker) before failing as busy. */
  waitMs?: number;
  /**
   * Called once when the run first waits on I/O (parks): from then on it holds no share of its
   * app's cap, and the caller may stop counting it as a running script too.
   */
  onPark?: () => void;
}

export const DEFAULT_GRACE_MS = 50;

/** Parked runs one worker holds at most (each keeps a QuickJS context of its own). */
export const PARKED_PER_WORKER = 256;

export const DEFAULT_RECYCLE_WASM_BYTES = 96 * 1024 * 1024;

/**
 * Blank contexts a worker keeps ready: half of PARKED_PER_WORKER, so a first burst of parked runs
 * (each in a context of its own) builds few of them while requests wait, at a small share of the
 * recycle bound (README: Blank contexts).
 */
export const BLANK_CONTEXTS_PER_WORKER = 128;

/**
 * Runs one worker may hold beyond the one it runs (see Pipelining above). One SQLite group commit
 * releases a batch of sync runs at once; with a shallower pipeline the rest of a batch waited for
 * a "done" to reach the main thread (the A/B behind this depth: README, pipelining).
 */
export const PIPELINE_DEPTH = 16;

/** Cells per worker; reused round-robin (a cell names its run, so reuse is safe; see run-cells.ts). */
const CELLS = 64;

/**
 * Scripts (by run key) each worker keeps after a run carried them: later runs of the key carry
 * only their ctx (the source, modules and limits cost a structured clone each way per run). The
 * pool's table of what a worker holds and the worker's own table are LRUs of this same size,
 * updated by the same run messages in the same order, so they agree (see WorkerRun.script).
 */
export const SCRIPTS_PER_WORKER = 128;

function sameLimits(a: RunLimits, b: RunLimits): boolean {
  for (const k in a) if (a[k as keyof RunLimits] !== b[k as keyof RunLimits]) return false;
  return true;
}

interface Pending {
  req: PoolRun;
  resolve(o: RunOutcome): void;
  waitTimer: TimerHandle | null;
  /** Handed to a worker (no longer waiting). */
  placed: boolean;
  /** Handed on ahead of time: the slot holding it, its run id and cell (see Pipelining). */
  held: { slot: Slot; id: number; cell: number } | null;
}

interface Active {
  id: number;
  /** Waited on I/O once (see Parked runs): no longer counted against its app's cap. */
  parked: boolean;
  ended: boolean;
  /** Assigned to an idle worker: its waiting run and cell until the worker starts it (see unstart). */
  assigned: { p: Pending; cell: number } | null;
  req: PoolRun;
  resolve(o: RunOutcome): void;
  started: number;
  watchdog: TimerHandle;
  /** SDK calls being answered (the caps themselves are counted in the worker). */
  inflight: number;
  /** Aborted when the run ends; made on the first SDK call (most runs make none). */
  abort: AbortController | null;
  onAbort: () => void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  /** The run executing (started and not parked yet), if any. */
  active: Active | null;
  /** Runs that parked, by id: all of one app, the one this worker may take further runs of. */
  parked: Map<number, Active>;
  /** Outgrew its memory bound with runs parked: takes nothing more, replaced once they end. */
  retiring: boolean;
  /** Script versions this worker served recently (affinity for warm contexts). */
  recent: string[];
  gone: boolean;
  /** Runs handed on to this worker, in the order it will start them. */
  held: Pending[];
  /** Shared with the worker: one cell per handed run (run-cells.ts). */
  cells: Int32Array;
  nextCell: number;
  /** The worker's script table as the pool mirrors it: run key → the limits it was sent with. */
  scripts: Lru<string, RunLimits>;
  /** Run messages waiting for this turn's flush (see `send`). */
  outgoing: { msg: Extract<ToWorker, { t: "run" }>; failed: () => void }[];
  /** Started on demand beyond the base workers (see Spare workers). */
  spare: boolean;
  /** A spare's stop once idle (armed while it has nothing to run). */
  idleTimer: TimerHandle | null;
}

/**
 * The worker entry: compiled JavaScript next to this file in production. When the sources run as
 * TypeScript (tests, dev), the entry is bundled once with esbuild into node_modules/.cache (named
 * by content hash, written atomically: test files build it concurrently), since a worker thread
 * cannot load TypeScript and a loader hook in every worker would cost seconds per start.
 */
async function workerEntry(): Promise<URL> {
  if (!import.meta.url.endsWith(".ts")) return new URL("./worker.js", import.meta.url);
  const [{ build }, fs, { createHash }] = await Promise.all([
    import("esbuild"),
    import("node:fs"),
    import("node:crypto"),
  ]);
  const out = await build({
    entryPoints: [fileURLToPath(new URL("./worker.ts", import.meta.url))],
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    packages: "external",
    write: false,
    logLevel: "error",
  });
  const code = out.outputFiles[0]?.text ?? "";
  const dir = fileURLToPath(new URL("../../node_modules/.cache/", import.meta.url));
  const file = `${dir}sandbox-worker-${createHash("sha256").update(code).digest("hex").slice(0, 16)}.mjs`;
  if (!fs.existsSync(file)) {
    fs.mkdirSync(dir, { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, code);
    fs.renameSync(tmp, file);
  }
  return pathToFileURL(file);
}

/** Structured clone turns Buffers into plain Uint8Arrays; the SDK expects Buffers. */
function withBuffers(v: unknown): unknown {
  if (v instanceof Uint8Array)
    return Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  if (Array.isArray(v)) return v.map(withBuffers);
  if (v !== null && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = withBuffers(x);
    return out;
  }
  return v;
}

export type EnginePool = Awaited<ReturnType<typeof createEnginePool>>;

/** Start the pool: the workers begin loading at once (await ready() to wait for them). */
export async function createEnginePool(deps: PoolOptions) {
  const [entry, wasm] = await Promise.all([workerEntry(), compileQuickJS()]);
  return enginePool(deps, entry, wasm);
}

function enginePool(opts: PoolOptions, entry: URL, wasm: WebAssembly.Module) {
  const slots: Slot[] = [];
  const queue: Pending[] = [];
  const perApp = new Map<string, number>();
  /** When a run of each app last started (see the wait bound in run()). */
  const lastStart = new Map<string, number>();
  let seq = 0;
  let closed = false;
  const graceMs = opts.graceMs ?? DEFAULT_GRACE_MS;
  const recycleWasmBytes = opts.recycleWasmBytes ?? DEFAULT_RECYCLE_WASM_BYTES;
  /** Counters since the pool was built (tests, metrics). */
  const stats = {
    /** Workers started beyond the initial ones. */
    replaced: 0,
    /** Spare workers started (see Spare workers). */
    sparesStarted: 0,
    /** Runs that parked (waited on I/O and left their worker to others). */
    parkedRuns: 0,
    /** Runs handed on to a busy worker ahead of time (pipelining). */
    handedOn: 0,
    /** Run messages that carried their script (the others carried only ctx). */
    scriptsSent: 0,
    /** Messages that carried runs to workers (one may carry several). */
    messagesSent: 0,
    /** Messages received from workers (one may carry a turn's "done"s and calls). */
    messagesReceived: 0,
  };

  /** Resolves once every worker has loaded its WASM module. */
  async function ready(): Promise<void> {
    await Promise.all(
      slots.map(
        (s) =>
          new Promise<void>((resolve) => {
            if (s.ready) return resolve();
            // Runs after the slot's own listener, which marks it ready.
            const on = () => {
              if (!s.ready) return;
              s.worker.off("message", on);
              resolve();
            };
            s.worker.on("message", on);
          }),
      ),
    );
  }

  function run(req: PoolRun): Promise<RunOutcome> {
    if (closed) return Promise.resolve(failure("internal_error", "The script engine is shutting down.", 0));
    if (req.waitMs !== undefined && opts.appQueue !== undefined && waitingOf(req.appId) >= opts.appQueue)
      return Promise.resolve(
        failure("busy", "Too many scripts of this app are running; try again shortly.", 0),
      );
    return new Promise((resolve) => {
      const p: Pending = { req, resolve, waitTimer: null, placed: false, held: null };
      const waitMs = req.waitMs;
      const expire = () => {
        // Its app's runs are still starting (parking, ending): the queue moves, so the run keeps
        // waiting; busy is for an app whose runs hold its cap for the whole wait.
        const moved = (lastStart.get(req.appId) ?? Number.NEGATIVE_INFINITY) + (waitMs ?? 0);
        if (waitMs !== undefined && moved > opts.clock.now()) {
          p.waitTimer = opts.clock.setTimeout(expire, moved - opts.clock.now());
          return;
        }
        if (p.held) {
          // Still not started: withdraw it; if the worker just started it, it runs (no longer waiting).
          if (withdraw(p)) {
            resolve(failure("busy", "Too many scripts of this app are running; try again shortly.", 0));
            pump();
          }
          return;
        }
        const i = queue.indexOf(p);
        if (i < 0) return;
        // A worker being replaced is not the app's fault: keep waiting for it (the caller's own
        // deadline still bounds the wait); busy is for an app at its cap or a pool full of runs.
        const atCap = (perApp.get(req.appId) ?? 0) >= opts.appConcurrency;
        if (!atCap && slots.some((s) => !s.ready && !s.gone) && waitMs !== undefined) {
          p.waitTimer = opts.clock.setTimeout(expire, waitMs);
          return;
        }
        queue.splice(i, 1);
        resolve(failure("busy", "Too many scripts of this app are running; try again shortly.", 0));
      };
      queue.push(p);
      pump();
      // Only a run that found no slot needs its wait bounded (most runs start at once).
      if (waitMs !== undefined && Number.isFinite(waitMs) && !p.placed)
        p.waitTimer = opts.clock.setTimeout(expire, waitMs);
    });
  }

  /** Runs of `appId` waiting to start (queued, or handed on and not started). */
  function waitingOf(appId: string): number {
    let n = 0;
    for (const p of queue) if (p.req.appId === appId) n++;
    for (const s of slots) for (const p of s.held) if (p.req.appId === appId) n++;
    return n;
  }

  async function close(): Promise<void> {
    closed = true;
    const held = slots.flatMap((s) => s.held.splice(0));
    for (const p of [...queue.splice(0), ...held]) {
      p.waitTimer?.cancel();
      if (p.held) unwatch(p);
      p.held = null;
      p.resolve(failure("internal_error", "The script engine is shutting down.", 0));
    }
    await Promise.all(
      slots.map(async (s) => {
        s.idleTimer?.cancel();
        for (const a of runsOn(s))
          finish(s, a, failure("internal_error", "The script engine is shutting down.", 0));
        s.gone = true;
        await s.worker.terminate();
      }),
    );
  }

  function failure(kind: FailureKind, message: string, durationMs: number): RunOutcome {
    return { ok: false, kind, message, logs: [], durationMs };
  }

  function spawn(spare: boolean): Slot {
    const cells = new SharedArrayBuffer(CELLS * Int32Array.BYTES_PER_ELEMENT);
    const data: WorkerData = {
      wasm: wasm,
      cells,
      recycleWasmBytes: recycleWasmBytes,
      sdkCallsInFlight: opts.sdkCallsInFlight,
      sdkCallsPerRun: opts.sdkCallsPerRun,
      scriptsPerWorker: SCRIPTS_PER_WORKER,
      blankContexts: opts.blankContexts ?? BLANK_CONTEXTS_PER_WORKER,
    };
    const worker = new Worker(entry, { workerData: data });
    const slot: Slot = {
      worker,
      ready: false,
      active: null,
      parked: new Map(),
      retiring: false,
      recent: [],
      gone: false,
      held: [],
      cells: new Int32Array(cells),
      nextCell: 0,
      scripts: new Lru(SCRIPTS_PER_WORKER),
      outgoing: [],
      spare,
      idleTimer: null,
    };
    worker.on("message", (m: FromWorkerPost) => onMessage(slot, m));
    worker.on("error", (err) => {
      opts.logger.error({ err }, "sandbox worker failed");
      lost(slot);
    });
    worker.on("exit", () => lost(slot));
    return slot;
  }

  /** A worker ended without being asked to: fail its runs and start a replacement. */
  function lost(slot: Slot): void {
    if (slot.gone) return;
    replace(slot);
  }

  function elapsed(a: Active): number {
    return opts.clock.now() - a.started;
  }

  /** Every run still on `slot` (the executing one and the parked ones). */
  function runsOn(slot: Slot): Active[] {
    return slot.active ? [slot.active, ...slot.parked.values()] : [...slot.parked.values()];
  }

  /** Terminate the worker and start another; runs still on it are lost with it (internal_error). */
  function replace(slot: Slot): void {
    for (const a of runsOn(slot))
      finish(slot, a, failure("internal_error", "The script engine stopped unexpectedly.", elapsed(a)));
    slot.gone = true;
    void slot.worker.terminate();
    requeueHeld(slot);
    const i = slots.indexOf(slot);
    if (i < 0 || closed) return;
    slot.idleTimer?.cancel();
    slots[i] = spawn(slot.spare);
    stats.replaced++;
  }

  function pump(): void {
    if (closed) return;
    for (let i = 0; i < queue.length; ) {
      const p = queue[i] as Pending;
      if (executingOf(p.req.appId) >= opts.appConcurrency) {
        i++;
        continue;
      }
      // A worker with handed-on runs but none known running is about to start one ("started").
      // One holding parked runs takes only runs of their app (a context never serves another).
      const appId = p.req.appId;
      const idle = slots.filter(
        (s) =>
          s.ready &&
          !s.active &&
          !s.gone &&
          !s.retiring &&
          s.held.length === 0 &&
          (s.parked.size === 0 || (s.parked.size < PARKED_PER_WORKER && parkedApp(s) === appId)),
      );
      if (idle.length === 0) {
        addSpare();
        break;
      }
      const key = p.req.key;
      // Runs of an app gather on the workers already holding its parked runs: the others stay free.
      const slot =
        idle.find((s) => s.parked.size > 0) ??
        (key ? idle.find((s) => s.recent.includes(key)) : undefined) ??
        (idle[0] as Slot);
      queue.splice(i, 1);
      p.placed = true;
      p.waitTimer?.cancel();
      assign(slot, p);
    }
    pipeline();
    idleSpares();
  }

  /**
   * Runs of `appId` executing, counting a worker that is about to start one of its handed-on runs
   * (its last run parked or ended before the hand-over reached it; "started" follows).
   */
  function executingOf(appId: string): number {
    let n = perApp.get(appId) ?? 0;
    for (const s of slots) if (!s.active && s.held[0]?.req.appId === appId) n++;
    return n;
  }

  function parkedApp(slot: Slot): string | undefined {
    for (const a of slot.parked.values()) return a.req.appId;
    return undefined;
  }

  /** A run below its app's cap found no free worker: start a spare, unless one is loading already. */
  function addSpare(): void {
    const spares = slots.filter((s) => s.spare).length;
    if (spares >= (opts.spareWorkers ?? 0) || slots.some((s) => !s.ready && !s.gone)) return;
    slots.push(spawn(true));
    stats.sparesStarted++;
  }

  /** Arm the stop of spares with nothing to run; disarm it for those that got work. */
  function idleSpares(): void {
    for (const slot of slots) {
      if (!slot.spare || slot.gone) continue;
      const idle =
        slot.ready &&
        !slot.active &&
        slot.parked.size === 0 &&
        slot.held.length === 0 &&
        slot.outgoing.length === 0;
      if (!idle) {
        slot.idleTimer?.cancel();
        slot.idleTimer = null;
      } else
        slot.idleTimer ??= opts.clock.setTimeout(() => {
          slot.idleTimer = null;
          if (
            slot.gone ||
            slot.active ||
            slot.parked.size > 0 ||
            slot.held.length > 0 ||
            slot.outgoing.length > 0
          )
            return;
          slot.gone = true;
          slots.splice(slots.indexOf(slot), 1);
          void slot.worker.terminate();
        }, opts.spareIdleMs ?? DEFAULT_SPARE_IDLE_MS);
    }
  }

  /**
   * Hand waiting runs on to workers running their app (see Pipelining), in queue order, stopping
   * at the first run of an app without a worker: it waits for a free worker, and no run behind
   * it may take a worker's time first.
   */
  function pipeline(): void {
    for (let i = 0; i < queue.length; ) {
      const p = queue[i] as Pending;
      const { appId, key } = p.req;
      // Below its cap, a run waits for a worker still loading (at start, or a replacement): behind
      // its app's current run it could wait for as long as that run blocks (e.g. on a held request
      // whose release needs this very run: sync-batching.test.ts hung so once under load).
      if ((perApp.get(appId) ?? 0) < opts.appConcurrency && slots.some((s) => !s.ready && !s.gone)) return;
      const serving = slots.filter(
        (s) =>
          s.active?.req.appId === appId &&
          !s.gone &&
          !s.retiring &&
          s.held.length < PIPELINE_DEPTH &&
          (s.held.length === 0 || s.held[s.held.length - 1]?.req.appId === appId),
      );
      if (serving.length === 0) {
        if ((perApp.get(appId) ?? 0) < opts.appConcurrency) return;
        i++; // at its cap on workers that cannot take more: it needs no worker of its own
        continue;
      }
      const slot =
        serving.find((s) => key !== null && (s.active?.req.key === key || s.recent[0] === key)) ??
        serving.reduce((a, b) => (b.held.length < a.held.length ? b : a));
      queue.splice(i, 1);
      hold(slot, p);
    }
  }

  /** Post a run to a busy worker, which starts it once its current runs end. */
  function hold(slot: Slot, p: Pending): void {
    const id = ++seq;
    const cell = slot.nextCell;
    slot.nextCell = (cell + 1) % CELLS;
    Atomics.store(slot.cells, cell, cellValue(id, CELL_WAITING));
    p.held = { slot, id, cell };
    slot.held.push(p);
    stats.handedOn++;
    watch(p);
    send(slot, { t: "run", id, cell, held: true, run: workerRun(slot, p.req) }, () => {
      if (withdraw(p)) p.resolve(failure("internal_error", "The script could not be started.", 0));
    });
  }

  /** Take back a handed-on run the worker has not started; false when it already started. */
  function withdraw(p: Pending): boolean {
    const h = p.held;
    if (!h) return false;
    if (!h.slot.gone && !moveCell(h.slot.cells, h.cell, h.id, CELL_WAITING, CELL_CANCELLED)) return false;
    const i = h.slot.held.indexOf(p);
    if (i >= 0) h.slot.held.splice(i, 1);
    unwatch(p);
    p.held = null;
    p.waitTimer?.cancel();
    return true;
  }

  /** Handed-on runs are withdrawn when their signal aborts. */
  const heldWatch = new SignalWatch<Pending>((runs) => {
    for (const x of runs)
      if (withdraw(x)) x.resolve(failure("internal_error", "The script engine is shutting down.", 0));
    pump();
  });

  function watch(p: Pending): void {
    heldWatch.add(p.req.signal, p);
  }

  function unwatch(p: Pending): void {
    heldWatch.delete(p.req.signal, p);
  }

  /** Started runs (executing or parked) end as internal_error when their signal aborts. */
  const activeWatch = new SignalWatch<Active>((runs) => {
    for (const a of runs) a.onAbort();
  });

  /** A worker that will start nothing more: its handed-on runs go back to the queue's front. */
  function requeueHeld(slot: Slot): void {
    const back = slot.held.splice(0);
    for (const p of back) {
      unwatch(p);
      p.held = null;
    }
    queue.unshift(...back);
  }

  /** The worker started `p` right after its previous run (announced in that run's "done"). */
  function promote(slot: Slot, p: Pending): void {
    const i = slot.held.indexOf(p);
    if (i >= 0) slot.held.splice(i, 1);
    const id = p.held?.id ?? 0;
    unwatch(p);
    p.held = null;
    p.placed = true;
    p.waitTimer?.cancel();
    activate(slot, p, id);
  }

  function assign(slot: Slot, p: Pending): void {
    const id = ++seq;
    const cell = slot.nextCell;
    slot.nextCell = (cell + 1) % CELLS;
    Atomics.store(slot.cells, cell, cellValue(id, CELL_WAITING));
    if (!activate(slot, p, id, cell)) return;
    send(slot, { t: "run", id, cell, held: false, run: workerRun(slot, p.req) }, () => {
      const a = slot.active;
      if (a?.id !== id) return;
      finish(slot, a, failure("internal_error", "The script could not be started.", 0));
      pump();
    });
  }

  /**
   * Queue a run message for `slot`; the queued messages of every worker go out together once the
   * current event-loop turn is done (setImmediate): the runs a group commit releases at once reach
   * a worker as one message, not one each (each message costs the main thread a structured clone
   * and a cross-thread wake-up). Each run keeps its own cell, "started" and "done": only the
   * hand-over is shared. `failed` runs if the message cannot be posted.
   */
  function send(slot: Slot, msg: Extract<ToWorker, { t: "run" }>, failed: () => void): void {
    slot.outgoing.push({ msg, failed });
    if (flushing) return;
    flushing = setImmediate(() => flush());
  }

  let flushing: NodeJS.Immediate | null = null;

  function flush(): void {
    flushing = null;
    for (const slot of slots) {
      if (slot.outgoing.length === 0) continue;
      const out = slot.outgoing.splice(0);
      // A replaced worker's runs were already failed (its running one) or put back in the queue
      // (its handed-on ones) when it was replaced; a closed pool failed them all.
      if (slot.gone || closed) continue;
      try {
        slot.worker.postMessage(
          out.length === 1 ? out[0]?.msg : ({ t: "runs", runs: out.map((o) => o.msg) } satisfies ToWorker),
        );
        stats.messagesSent++;
      } catch {
        // Find the run that cannot be cloned: the others go alone.
        for (const o of out)
          try {
            slot.worker.postMessage(o.msg);
            stats.messagesSent++;
          } catch (err) {
            forgetScripts(slot);
            opts.logger.error({ err }, "could not hand a run to a sandbox worker");
            o.failed();
          }
      }
    }
    // Slots replaced meanwhile are no longer in `slots`: their queued messages are dropped with them.
  }

  /**
   * The run message's body: its script only when the worker does not hold that key with these
   * limits (the key names the sources; limits may change without them). Mirrors the worker's
   * table update (worker.ts `scriptOf`): a hit moves the key to the front, a send stores it.
   */
  function workerRun(slot: Slot, req: PoolRun): WorkerRun {
    const { key, limits } = req;
    if (key !== null) {
      const held = slot.scripts.get(key);
      if (held && sameLimits(held, limits)) return { key, script: null, ...ctxOf(req) };
      slot.scripts.set(key, limits);
    }
    stats.scriptsSent++;
    return {
      key,
      script: { name: req.name, source: req.source, modules: [...req.modules], limits },
      ...ctxOf(req),
    };
  }

  function ctxOf(req: PoolRun): Pick<WorkerRun, "ctx" | "ctxJson"> {
    return req.ctxJson !== undefined ? { ctx: null, ctxJson: req.ctxJson } : { ctx: req.ctx, ctxJson: null };
  }

  /**
   * A run message that failed to post left the mirror ahead of the worker: forget it all (the
   * worker may hold more than the pool then believes, never less; see SCRIPTS_PER_WORKER).
   */
  function forgetScripts(slot: Slot): void {
    slot.scripts = new Lru(SCRIPTS_PER_WORKER);
  }

  /** Make `p` the slot's running run (cap count, watchdog, abort); false when it ended at once. */
  function activate(slot: Slot, p: Pending, id: number, cell: number | null = null): boolean {
    const { req } = p;
    perApp.set(req.appId, (perApp.get(req.appId) ?? 0) + 1);
    lastStart.set(req.appId, opts.clock.now());
    const active: Active = {
      id,
      parked: false,
      ended: false,
      assigned: cell === null ? null : { p, cell },
      req,
      resolve: p.resolve,
      started: opts.clock.now(),
      // The hard limit: past the deadline and the grace the worker is stuck (one native call the
      // interrupt handler cannot reach); end the run now and replace the worker.
      watchdog: opts.clock.setTimeout(() => kill(slot, active, "timeout"), req.limits.timeoutMs + graceMs),
      inflight: 0,
      abort: null,
      onAbort: () => kill(slot, active, "internal_error"),
    };
    slot.active = active;
    if (req.key && slot.recent[0] !== req.key) {
      slot.recent = [req.key, ...slot.recent.filter((k) => k !== req.key)].slice(0, 64);
    }
    if (req.signal?.aborted) {
      kill(slot, active, "internal_error");
      return false;
    }
    activeWatch.add(req.signal, active);
    return true;
  }

  /**
   * End run `a` of `slot` with `kind` and replace its worker (it may be stuck): the worker's other
   * runs, parked ones included, are lost with it.
   */
  function kill(slot: Slot, a: Active, kind: FailureKind): void {
    if (a.ended || slot.gone) return;
    finish(slot, a, failure(kind, limitMessage(kind), elapsed(a)));
    replace(slot);
    pump();
  }

  function finish(slot: Slot, a: Active, outcome: RunOutcome): void {
    if (a.ended) return;
    a.ended = true;
    if (slot.active === a) slot.active = null;
    else slot.parked.delete(a.id);
    a.watchdog.cancel();
    // A ready-made reason: abort() without one builds a DOMException (and its stack) every run.
    a.abort?.abort(RUN_ENDED);
    activeWatch.delete(a.req.signal, a);
    if (!a.parked) uncount(a);
    a.resolve(outcome);
  }

  /**
   * A worker that starts nothing more may have been assigned a run while others were parked:
   * if it has not started it, it goes back to the queue's front.
   */
  function unstart(slot: Slot): void {
    const a = slot.active;
    if (!a?.assigned || !moveCell(slot.cells, a.assigned.cell, a.id, CELL_WAITING, CELL_CANCELLED)) return;
    const { p } = a.assigned;
    a.ended = true;
    slot.active = null;
    a.watchdog.cancel();
    activeWatch.delete(a.req.signal, a);
    uncount(a);
    p.placed = false;
    queue.unshift(p);
  }

  /** `a` no longer executes: its app's cap stops counting it. */
  function uncount(a: Active): void {
    const n = (perApp.get(a.req.appId) ?? 1) - 1;
    if (n <= 0) perApp.delete(a.req.appId);
    else perApp.set(a.req.appId, n);
  }

  /** The worker started run `next` (named by a "done" or "parked"): promote it, else replace. */
  function startedNext(slot: Slot, next: number | null): void {
    if (next === null || slot.active?.id === next) return;
    const p = slot.held.find((x) => x.held?.id === next);
    // Started after the main thread withdrew it: cannot happen by the cells' protocol, but
    // a worker running a run nobody waits for must not serve anything else.
    if (p && !slot.active) promote(slot, p);
    else replace(slot);
  }

  /**
   * A worker's message, or the messages of one of its turns (worker.ts Outbox): handled in order,
   * then one pass of the queue for all of them.
   */
  function onMessage(slot: Slot, m: FromWorkerPost): void {
    if (slot.gone) return;
    stats.messagesReceived++;
    let again = false;
    if (m.t === "batch") {
      for (const x of m.msgs) {
        if (slot.gone) break;
        again = handle(slot, x) || again;
      }
    } else again = handle(slot, m);
    if (again) pump();
  }

  /** One message of a worker; true when the queue needs a pass (a run ended, parked or started). */
  function handle(slot: Slot, m: FromWorker): boolean {
    switch (m.t) {
      case "ready":
        slot.ready = true;
        return true;
      case "log":
        opts.logger.error(m.obj, m.msg);
        return false;
      case "done": {
        if (m.lost) forgetScripts(slot);
        const a = runOf(slot, m.id);
        if (!a) return false;
        finish(slot, a, m.outcome);
        if (m.poisoned) {
          unstart(slot);
          replace(slot);
        } else if (m.next !== null) startedNext(slot, m.next);
        else if (m.wasmBytes > recycleWasmBytes || slot.retiring) {
          unstart(slot);
          // The worker starts nothing more; runs still parked in it finish first.
          if (slot.parked.size === 0 && !slot.active) replace(slot);
          else if (!slot.retiring) {
            slot.retiring = true;
            requeueHeld(slot);
          }
        }
        return true;
      }
      case "parked": {
        const a = slot.active;
        if (a?.id !== m.id) return false;
        slot.active = null;
        a.parked = true;
        slot.parked.set(a.id, a);
        stats.parkedRuns++;
        uncount(a);
        a.req.onPark?.();
        startedNext(slot, m.next);
        return true;
      }
      case "call":
        call(slot, m);
        return false;
      case "started": {
        // A handed-on run that arrived after the worker's previous run had ended.
        if (slot.active) return false;
        const p = slot.held.find((x) => x.held?.id === m.id);
        if (p) promote(slot, p);
        else replace(slot);
        return true;
      }
    }
  }

  /** The run `id` on `slot`: executing or parked. */
  function runOf(slot: Slot, id: number): Active | undefined {
    return slot.active?.id === id ? slot.active : slot.parked.get(id);
  }

  function call(slot: Slot, m: Extract<FromWorker, { t: "call" }>): void {
    const a = runOf(slot, m.id);
    if (!a) return;
    const reply = (r: { ok: true; value: unknown } | { ok: false; error: WireError }) => {
      if (a.ended || slot.gone) return;
      const msg = { t: "reply", id: m.id, call: m.call, ...r } as ToWorker;
      try {
        slot.worker.postMessage(msg);
      } catch (err) {
        opts.logger.error({ err, op: m.op }, "SDK result could not be sent to the sandbox");
        slot.worker.postMessage({
          t: "reply",
          id: m.id,
          call: m.call,
          ok: false,
          error: { kind: "internal", op: m.op },
        });
      }
    };
    a.inflight++;
    a.abort ??= new AbortController();
    const { signal } = a.abort;
    let result: Promise<unknown>;
    try {
      result = a.req.host(m.op, withBuffers(m.args) as unknown[], signal);
    } catch (err) {
      result = Promise.reject(err);
    }
    result.then(
      (value) => {
        a.inflight--;
        reply({ ok: true, value });
      },
      (err: unknown) => {
        a.inflight--;
        if (err instanceof ScriptVisibleError)
          reply({
            ok: false,
            error: { kind: "visible", message: err.message, ...(err.code ? { code: err.code } : {}) },
          });
        else if (err instanceof SizeLimitError) reply({ ok: false, error: { kind: "size", what: err.what } });
        else {
          if (!signal.aborted) opts.logger.error({ err, op: m.op }, "SDK call failed");
          reply({ ok: false, error: { kind: "internal", op: m.op } });
        }
      },
    );
  }

  for (let i = 0; i < Math.max(1, opts.workers); i++) slots.push(spawn(false));

  return {
    /** Workers in the pool and how many are running a script now (the metrics gauge). */
    get size(): number {
      return slots.length;
    },
    get busy(): number {
      return slots.filter((s) => s.active).length;
    },
    /** Runs waiting for a slot (queued, or handed on to a worker and not started yet). */
    get waiting(): number {
      return queue.length + slots.reduce((n, s) => n + s.held.length, 0);
    },
    /** Runs parked now. */
    get parked(): number {
      return slots.reduce((n, s) => n + s.parked.size, 0);
    },
    stats: stats as Readonly<typeof stats>,
    ready,
    run,
    close,
  };
}
