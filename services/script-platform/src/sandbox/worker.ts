/**
 * Entry of one sandbox worker thread (see pool.ts): its own QuickJS WebAssembly module, one run
 * at a time. SDK calls go to the main thread as messages; the main thread answers them. Imports
 * only sandbox files (no database, no kit runtime code), so it loads fast and holds no platform
 * state.
 *
 * Protocol (all messages are plain objects):
 *   main → worker  {t: "run", id, run: WorkerRun}
 *                  {t: "reply", id, call, ok: true, value} | {t: "reply", id, call, ok: false, error: WireError}
 *   worker → main  {t: "ready"} once the WASM module is loaded
 *                  {t: "call", id, call, op, args}
 *                  {t: "done", id, outcome: RunOutcome, wasmBytes, poisoned}
 *                  {t: "log", obj, msg} (host-side failures worth logging)
 */
import { parentPort, workerData } from "node:worker_threads";
import { SizeLimitError } from "./boundary.js";
import { Engine, type EngineClock, type RunOutcome, ScriptVisibleError } from "./engine.js";
import { type RunLimits, SANDBOX_DEFAULTS } from "./limits.js";
import { quickJS } from "./quickjs.js";
import { WEB_APIS_PRELUDE } from "./web-apis.js";

export interface WorkerRun {
  /** PLATFORM_SDK_CALLS_IN_FLIGHT and PLATFORM_SDK_CALLS_PER_RUN, counted where the calls start. */
  sdkCallsInFlight: number;
  sdkCallsPerRun: number;
  /** Warm-context key (see RunRequest.key). */
  key: string | null;
  name: string;
  source: string;
  modules: [string, string][];
  ctx: unknown;
  limits: RunLimits;
}

/** An SDK failure as it crosses back: visible text (with an optional code), a size limit, or internal. */
export type WireError =
  | { kind: "visible"; message: string; code?: string }
  | { kind: "size"; what: string }
  | { kind: "internal"; op: string };

export type ToWorker =
  | { t: "run"; id: number; run: WorkerRun }
  | { t: "reply"; id: number; call: number; ok: true; value: unknown }
  | { t: "reply"; id: number; call: number; ok: false; error: WireError };

export type FromWorker =
  | { t: "ready" }
  | { t: "call"; id: number; call: number; op: string; args: unknown[] }
  | { t: "done"; id: number; outcome: RunOutcome; wasmBytes: number; poisoned: boolean }
  | { t: "log"; obj: object; msg: string };

const compiled = (workerData as { wasm?: WebAssembly.Module } | null)?.wasm;
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
const post = (m: FromWorker) => port.postMessage(m);
const engine = new Engine({
  clock,
  logger: {
    error: (obj, msg) => {
      const err = (obj as { err?: unknown }).err;
      post({ t: "log", obj: { ...obj, err: err instanceof Error ? err.message : String(err) }, msg });
    },
  },
  webApis: WEB_APIS_PRELUDE,
});

const pending = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void }>();
let seq = 0;

function toError(e: WireError): Error {
  if (e.kind === "size") return new SizeLimitError(e.what);
  if (e.kind === "visible") return new ScriptVisibleError(e.message, e.code);
  return new ScriptVisibleError(`Internal error in ${e.op}.`);
}

async function run(id: number, r: WorkerRun): Promise<void> {
  let poisoned = false;
  let inflight = 0;
  let total = 0;
  let outcome: RunOutcome;
  try {
    outcome = await engine.run({
      key: r.key,
      name: r.name,
      source: r.source,
      modules: new Map(r.modules),
      ctx: r.ctx,
      limits: r.limits,
      host: (op, args) => {
        // Counted here, where the script's calls start: the script sees a rejected promise it can
        // catch (error.code), and the main thread never receives the excess.
        if (inflight >= r.sdkCallsInFlight)
          return Promise.reject(
            new ScriptVisibleError(
              `sdk_busy: more than ${r.sdkCallsInFlight} SDK calls in flight; await some first.`,
              "sdk_busy",
            ),
          );
        if (total >= r.sdkCallsPerRun)
          return Promise.reject(
            new ScriptVisibleError(
              `sdk_limit: more than ${r.sdkCallsPerRun} SDK calls in one run.`,
              "sdk_limit",
            ),
          );
        inflight++;
        total++;
        return new Promise<unknown>((resolve, reject) => {
          const call = ++seq;
          pending.set(call, { resolve, reject });
          post({ t: "call", id, call, op, args });
        }).finally(() => {
          inflight--;
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
  for (const [, p] of pending) p.reject(new ScriptVisibleError("The run ended."));
  pending.clear();
  const mod = await quickJS();
  poisoned ||= engine.poisoned;
  post({ t: "done", id, outcome, wasmBytes: poisoned ? 0 : mod.getWasmMemory().buffer.byteLength, poisoned });
}

port.on("message", (m: ToWorker) => {
  if (m.t === "run") void run(m.id, m.run);
  else if (m.t === "reply") {
    const p = pending.get(m.call);
    if (!p) return;
    pending.delete(m.call);
    if (m.ok) p.resolve(m.value);
    else p.reject(toError(m.error));
  }
});

// One throwaway run before announcing readiness: V8 compiles WASM functions lazily, and the
// first run on a fresh module would otherwise pay for it (hundreds of ms) inside its time limit.
const WARM_UP: WorkerRun = {
  sdkCallsInFlight: 1,
  sdkCallsPerRun: 1,
  key: null,
  name: "warm-up",
  source: "export default async () => { log.info(JSON.stringify({ a: [1] })); return { statusCode: 200 }; }",
  modules: [],
  ctx: {},
  limits: { ...SANDBOX_DEFAULTS, timeoutMs: 30_000 },
};

void quickJS(compiled).then(
  async () => {
    await engine.run({ ...WARM_UP, modules: new Map(), host: async () => null });
    post({ t: "ready" });
  },
  (err) => {
    post({ t: "log", obj: { err: String(err) }, msg: "sandbox worker could not load QuickJS" });
    process.exit(1);
  },
);
