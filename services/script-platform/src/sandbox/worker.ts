/**
 * Entry of one sandbox worker thread (see pool.ts): its own QuickJS WebAssembly module, one run
 * executing at a time and any number parked (waiting on an SDK call, `fetch` or a timer, each in
 * its own context). SDK calls go to the main thread as messages; the main thread answers them. Imports
 * only sandbox files (no database, no kit runtime code), so it loads fast and holds no platform
 * state.
 *
 * Protocol (all messages are plain objects):
 *   main → worker  {t: "run", id, cell, run: WorkerRun}
 *                  {t: "reply", id, call, ok: true, value} | {t: "reply", id, call, ok: false, error: WireError}
 *   worker → main  {t: "ready"} once the WASM module is loaded
 *                  {t: "call", id, call, op, args}
 *                  {t: "started", id} a handed-on run started while none ran before it
 *                  {t: "parked", id, next} the run waits on I/O for the first time; `next` started
 *                  {t: "done", id, outcome: RunOutcome, wasmBytes, poisoned, next}
 *                  {t: "log", obj, msg} (host-side failures worth logging)
 *                  {t: "batch", msgs} several of the above, in order (see Outbox)
 *
 * Runs queue here in the order they arrive: the pool may hand a worker the next runs of the app
 * it is serving before the current one ends (pipelining), so the worker never idles waiting for
 * the main thread's turn. Each run owns a cell of the shared `cells` array: the worker starts a
 * queued run only by moving its cell from WAITING to STARTED, and the main thread withdraws one
 * (its wait for a slot expired, shutdown) only by moving it from WAITING to CANCELLED, so the two
 * never both win. `next` in "done" and "parked" names the run started right after (null: none,
 * e.g. when this worker is to be replaced and starts nothing more). A queued run starts only
 * while no run executes: whenever the last executing one parks or ends.
 */
import { parentPort, workerData } from "node:worker_threads";
import { SizeLimitError } from "./boundary.js";
import { createEngine, type EngineClock, type RunOutcome, ScriptVisibleError } from "./engine.js";
import { type RunLimits, SANDBOX_DEFAULTS } from "./limits.js";
import { Lru } from "./lru.js";
import { quickJS } from "./quickjs.js";
import { CELL_STARTED, CELL_WAITING, moveCell } from "./run-cells.js";
import { WEB_APIS_PRELUDE } from "./web-apis.js";

export interface WorkerRun {
  /** Warm-context key (see RunRequest.key). */
  key: string | null;
  /**
   * The script, or null when this worker already holds it under `key` with the same limits: the
   * worker keeps the scripts of its last SCRIPTS_PER_WORKER keys (an LRU the pool mirrors, both
   * updated by each run message in arrival order). Always sent for a run without a key.
   */
  script: WorkerScript | null;
  ctx: unknown;
  /** The ctx as JSON text without bytes, sent instead of `ctx` (RunRequest.ctxJson). */
  ctxJson: string | null;
}

export interface WorkerScript {
  name: string;
  source: string;
  modules: [string, string][];
  limits: RunLimits;
}

/** An SDK failure as it crosses back: visible text (with an optional code), a size limit, or internal. */
export type WireError =
  | { kind: "visible"; message: string; code?: string }
  | { kind: "size"; what: string }
  | { kind: "internal"; op: string };

export interface WorkerData {
  wasm: WebAssembly.Module;
  /** One Int32 cell per queued run (indexed by the run message's `cell`). */
  cells: SharedArrayBuffer;
  /** The pool replaces a worker whose WASM memory grew past this: it starts no further run. */
  recycleWasmBytes: number;
  /** PLATFORM_SDK_CALLS_IN_FLIGHT and PLATFORM_SDK_CALLS_PER_RUN, counted where the calls start. */
  sdkCallsInFlight: number;
  sdkCallsPerRun: number;
  /** Size of the script table (pool.ts SCRIPTS_PER_WORKER). */
  scriptsPerWorker: number;
  /** Blank contexts kept ready (see stockUp); 0: none. */
  blankContexts?: number;
}

export type ToWorker =
  /** `held`: handed on ahead of time (announce its start if no "done" does). */
  | { t: "run"; id: number; cell: number; held: boolean; run: WorkerRun }
  /** Several run messages at once, in order (the pool hands over a turn's runs together). */
  | { t: "runs"; runs: { t: "run"; id: number; cell: number; held: boolean; run: WorkerRun }[] }
  | { t: "reply"; id: number; call: number; ok: true; value: unknown }
  | { t: "reply"; id: number; call: number; ok: false; error: WireError };

export type FromWorker =
  | { t: "ready" }
  | { t: "call"; id: number; call: number; op: string; args: unknown[] }
  | { t: "started"; id: number }
  | { t: "parked"; id: number; next: number | null }
  | {
      t: "done";
      id: number;
      outcome: RunOutcome;
      wasmBytes: number;
      poisoned: boolean;
      next: number | null;
      /** The run came without its script and this worker did not hold it (the tables disagreed). */
      lost?: boolean;
    }
  | { t: "log"; obj: object; msg: string };

/** What the worker posts: one message, or the messages of one turn together (see Outbox). */
export type FromWorkerPost = FromWorker | { t: "batch"; msgs: FromWorker[] };

const data = workerData as WorkerData | null;
const compiled = data?.wasm;
const cells = data ? new Int32Array(data.cells) : null;
const recycleWasmBytes = data?.recycleWasmBytes ?? Number.POSITIVE_INFINITY;
const sdkCallsInFlight = data?.sdkCallsInFlight ?? 1;
const sdkCallsPerRun = data?.sdkCallsPerRun ?? 1;

/** A script as runs use it: its modules as the engine takes them, built once per key. */
interface HeldScript {
  name: string;
  source: string;
  modules: Map<string, string>;
  limits: RunLimits;
  /** Its last run executed briefly before it ended or first parked (see Outbox). */
  fast: boolean;
}
const scripts = new Lru<string, HeldScript>(data?.scriptsPerWorker ?? 128);

/** The run's script: stored when the message carries it, else looked up (null: not held). */
function scriptOf(r: WorkerRun): HeldScript | null {
  if (r.script) {
    const held = { ...r.script, modules: new Map(r.script.modules), fast: false };
    if (r.key !== null) scripts.set(r.key, held);
    return held;
  }
  return r.key === null ? null : (scripts.get(r.key) ?? null);
}
const port = parentPort;
if (!port) throw new Error("sandbox worker: no parent port");

const clock: EngineClock = {
  now: () => Date.now(),
  iso: () => new Date().toISOString(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(t) };
  },
};
/**
 * Outbox: messages to the main thread wait until this turn of the worker's event loop ends
 * (setImmediate), so the runs a turn finishes (a pipelined hand-over runs back to back) cost the
 * main thread one message event and one pass of the pool's bookkeeping, not one each. A finished
 * run must not wait behind one that may hang, so the outbox also goes out before a run starts
 * whose script has not been seen executing briefly (FAST_MS; a new script builds its context
 * first), and whenever a run's JavaScript has executed for a while (the engine's interrupt
 * handler or a full slice of promise jobs: `onBusy`).
 */
const outbox: FromWorker[] = [];
let flushing: NodeJS.Immediate | null = null;
const FAST_MS = 2;

function post(m: FromWorker): void {
  outbox.push(m);
  flushing ??= setImmediate(flush);
}

function flush(): void {
  if (flushing) clearImmediate(flushing);
  flushing = null;
  if (outbox.length === 0) return;
  const msgs = outbox.splice(0);
  port?.postMessage(msgs.length === 1 ? msgs[0] : ({ t: "batch", msgs } satisfies FromWorkerPost));
}
const engine = createEngine({
  clock,
  logger: {
    error: (obj, msg) => {
      const err = (obj as { err?: unknown }).err;
      post({ t: "log", obj: { ...obj, err: err instanceof Error ? err.message : String(err) }, msg });
    },
  },
  webApis: WEB_APIS_PRELUDE,
  // Past the recycle bound the worker is replaced once its runs end; runs still executing or
  // parked may grow it this far before an allocation fails (size_limit).
  maxWasmBytes: 2 * recycleWasmBytes,
  onBusy: () => {
    if (outbox.length > 0) flush();
  },
});

const pending = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void }>();

let seq = 0;

function toError(e: WireError): Error {
  if (e.kind === "size") return new SizeLimitError(e.what);
  if (e.kind === "visible") return new ScriptVisibleError(e.message, e.code);
  return new ScriptVisibleError(`Internal error in ${e.op}.`);
}

/** Runs in arrival order, waiting for no run to execute. */
interface Queued {
  id: number;
  cell: number;
  held: boolean;
  key: string | null;
  script: HeldScript | null;
  ctx: unknown;
  ctxJson: string | null;
}
const queue: Queued[] = [];
/**
 * Runs started here and not parked: the worker starts a queued run only while this is 0, so at
 * most one run executes JavaScript at a time and the others wait on I/O (parked).
 */
let executing = 0;
/** Runs started here and not ended (executing or parked). */
let started = 0;
/** Set once this worker must start nothing more (its module aborted or outgrew the recycle bound). */
let retired = false;

/** The next queued run this worker may start (claims its cell); withdrawn ones are skipped. */
function claimNext(): Queued | null {
  for (let q = queue.shift(); q; q = queue.shift()) {
    if (!cells || moveCell(cells, q.cell, q.id, CELL_WAITING, CELL_STARTED)) return q;
  }
  return null;
}

/**
 * Claim the next queued run when none executes, post `announce` naming it (or null), then start
 * it: the pool learns of a start before any message of the started run.
 */
function startNext(announce: (next: Queued | null) => void): void {
  const next = executing > 0 || retired ? null : claimNext();
  announce(next);
  if (!next) {
    if (started === 0) stockUp();
    return;
  }
  if (!next.script?.fast) flush();
  void run(next);
}

/**
 * Blank contexts (engine `prepare`) built while the worker holds no run (none executing or
 * parked: a parked run's reply must not wait behind builds), one per event-loop turn so a message
 * that arrives meanwhile waits for one build at most: the first burst of runs of new scripts
 * (each needs a context of its own while they are parked) skips most of their cost.
 */
const BLANK_CONTEXTS = data?.blankContexts ?? 0;
let stocking: NodeJS.Immediate | null = null;

function stockUp(): void {
  if (stocking || retired || BLANK_CONTEXTS === 0) return;
  stocking = setImmediate(() => {
    stocking = null;
    if (started > 0 || queue.length > 0 || retired) return;
    // Within half the recycle bound: blanks must not make the pool replace an idle worker.
    quickJS()
      .then((mod) =>
        mod.getWasmMemory().buffer.byteLength < recycleWasmBytes / 2 ? engine.prepare(BLANK_CONTEXTS) : false,
      )
      .then(
        (more) => {
          if (more) stockUp();
        },
        (err) =>
          post({ t: "log", obj: { err: String(err) }, msg: "sandbox worker could not build a context" }),
      );
  });
}

/** A handed-on run started with no other message naming it: "started" announces it. */
function announceStarted(next: Queued | null): void {
  if (next?.held) post({ t: "started", id: next.id });
}

/** One run, from its start to its "done" (other runs start while it is parked). */
async function run(q: Queued): Promise<void> {
  executing++;
  started++;
  const { id, script } = q;
  if (!script) {
    // Not held (the tables disagreed, which their protocol rules out): the run fails, and the
    // pool, told by `lost`, sends every script again.
    executing--;
    started--;
    const outcome: RunOutcome = {
      ok: false,
      kind: "internal_error",
      message: "The script could not be started.",
      logs: [],
      durationMs: 0,
    };
    startNext((next) =>
      post({ t: "done", id, outcome, wasmBytes: 0, poisoned: false, next: next?.id ?? null, lost: true }),
    );
    return;
  }
  let poisoned = false;
  let reportedPark = false;
  const startedAt = performance.now();
  /** How long it executed before it first parked (or ended): decides `script.fast`. */
  let firstSpan = -1;
  /** This run's SDK calls waiting for their reply (rejected when it ends). */
  const mine = new Set<number>();
  let inflight = 0;
  let total = 0;
  let outcome: RunOutcome;
  try {
    outcome = await engine.run({
      key: q.key,
      name: script.name,
      source: script.source,
      modules: script.modules,
      ctx: q.ctx,
      ...(q.ctxJson !== null ? { ctxJson: q.ctxJson } : {}),
      limits: script.limits,
      onPark: (parked) => {
        if (!parked) {
          executing++;
          return;
        }
        executing--;
        if (firstSpan < 0) firstSpan = performance.now() - startedAt;
        // The first park tells the pool this run no longer executes (its app's cap stops
        // counting it); later ones only announce a run they started.
        if (reportedPark) startNext(announceStarted);
        else {
          reportedPark = true;
          startNext((next) => post({ t: "parked", id, next: next?.id ?? null }));
        }
      },
      host: (op, args) => {
        // Counted here, where the script's calls start: the script sees a rejected promise it can
        // catch (error.code), and the main thread never receives the excess.
        if (inflight >= sdkCallsInFlight)
          return Promise.reject(
            new ScriptVisibleError(
              `sdk_busy: more than ${sdkCallsInFlight} SDK calls in flight; await some first.`,
              "sdk_busy",
            ),
          );
        if (total >= sdkCallsPerRun)
          return Promise.reject(
            new ScriptVisibleError(
              `sdk_limit: more than ${sdkCallsPerRun} SDK calls in one run.`,
              "sdk_limit",
            ),
          );
        inflight++;
        total++;
        const call = ++seq;
        return new Promise<unknown>((resolve, reject) => {
          pending.set(call, { resolve, reject });
          mine.add(call);
          post({ t: "call", id, call, op, args });
        }).finally(() => {
          inflight--;
          mine.delete(call);
        });
      },
    });
  } catch (err) {
    // The WASM module aborted (an engine assertion, memory exhausted below the limit): this
    // module's state cannot be trusted any more; the pool replaces the worker.
    poisoned = true;
    outcome = {
      ok: false,
      kind: "internal_error",
      message: "The script engine failed; the run was stopped.",
      logs: [],
      durationMs: 0,
    };
    post({
      t: "log",
      obj: { err: err instanceof Error ? err.message : String(err) },
      msg: "sandbox worker aborted",
    });
  }
  for (const call of mine) {
    pending.get(call)?.reject(new ScriptVisibleError("The run ended."));
    pending.delete(call);
  }
  if (firstSpan < 0) firstSpan = performance.now() - startedAt;
  script.fast = !poisoned && firstSpan < FAST_MS;
  const mod = await quickJS();
  poisoned ||= engine.poisoned;
  const wasmBytes = poisoned ? 0 : mod.getWasmMemory().buffer.byteLength;
  retired ||= poisoned || wasmBytes > recycleWasmBytes;
  executing--;
  started--;
  startNext((next) => post({ t: "done", id, outcome, wasmBytes, poisoned, next: next?.id ?? null }));
}

/** Queue a run message's run. */
function arrive(m: { id: number; cell: number; held: boolean; run: WorkerRun }): void {
  // The table is updated on arrival, in message order, even for a run withdrawn later: the pool
  // updated its mirror when it sent the message.
  queue.push({
    id: m.id,
    cell: m.cell,
    held: m.held,
    key: m.run.key,
    script: scriptOf(m.run),
    ctx: m.run.ctx,
    ctxJson: m.run.ctxJson ?? null,
  });
}

port.on("message", (m: ToWorker) => {
  if (m.t === "run" || m.t === "runs") {
    if (retired) return; // the pool replaces this worker and hands its queued runs to another
    if (m.t === "run") arrive(m);
    else for (const r of m.runs) arrive(r);
    startNext(announceStarted);
  } else if (m.t === "reply") {
    const p = pending.get(m.call);
    if (!p) return;
    pending.delete(m.call);
    if (m.ok) p.resolve(m.value);
    else p.reject(toError(m.error));
  }
});

// One throwaway run before announcing readiness: V8 compiles WASM functions lazily, and the
// first run on a fresh module would otherwise pay for it (hundreds of ms) inside its time limit.
const WARM_UP = {
  key: null,
  name: "warm-up",
  source: "export default async () => { log.info(JSON.stringify({ a: [1] })); return { statusCode: 200 }; }",
  modules: new Map<string, string>(),
  ctx: {},
  limits: { ...SANDBOX_DEFAULTS, timeoutMs: 30_000 },
};

void quickJS(compiled).then(
  async () => {
    await engine.run({ ...WARM_UP, host: async () => null });
    post({ t: "ready" });
    stockUp();
  },
  (err) => {
    post({ t: "log", obj: { err: String(err) }, msg: "sandbox worker could not load QuickJS" });
    flush();
    process.exit(1);
  },
);
