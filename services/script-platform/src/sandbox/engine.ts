import { randomBytes } from "node:crypto";
import type { Clock } from "@app/kit/clock";
import type {
  QuickJSContext,
  QuickJSDeferredPromise,
  QuickJSHandle,
  QuickJSRuntime,
} from "quickjs-emscripten-core";
import { decodeFromGuest, encodeForGuest, SizeLimitError } from "./boundary.js";
import {
  memoryBytes,
  OPS_PER_INTERRUPT,
  OPS_PER_JOB,
  type RunLimits,
  SANDBOX_DEFAULTS,
  stackBytes,
} from "./limits.js";
import { PRELUDE_SOURCE } from "./prelude.js";
import { quickJS } from "./quickjs.js";

/** How a run failed. The host decides it from its own flags, never from text a script controls. */
export type FailureKind =
  | "timeout"
  | "operation_limit"
  | "size_limit"
  | "call_depth_limit"
  | "script_error"
  | "internal_error"
  /** No run slot for the app within the wait (PLATFORM_APP_CONCURRENCY): 503 with Retry-After. */
  | "busy";

/** Where a script error came from: its stack and the 1-based line/column in the entry's source. */
export interface ErrorDetail {
  stack: string | null;
  line: number | null;
  column: number | null;
}

export type LogLevel = "trace" | "debug" | "info" | "warn" | "error";
export interface LogEntry {
  level: LogLevel;
  message: string;
  at: string;
}

export type RunOutcome =
  | { ok: true; value: unknown; logs: LogEntry[]; durationMs: number }
  | {
      ok: false;
      kind: FailureKind;
      message: string;
      logs: LogEntry[];
      durationMs: number;
      detail?: ErrorDetail;
    };

/** An error whose message the script may see (SDK validation, "not found", HTTP category...). */
export class ScriptVisibleError extends Error {
  /** Set on the guest's error object as `code` (e.g. `sdk_busy`) so a script can tell cases apart. */
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = "Error";
  }
}

/** What the engine needs of time: the deadline check and log timestamps. */
export type EngineClock = Pick<Clock, "now" | "iso" | "setTimeout">;
/** Where host-side failures are reported (pino's signature, or a worker's message port). */
export interface EngineLog {
  error(obj: object, msg: string): void;
}

/** The SDK side: one call per guest `hostCall(op, ...)`; the value returned crosses back. */
export type HostCall = (op: string, args: unknown[], signal: AbortSignal) => Promise<unknown>;

export interface RunRequest {
  /** Entry module name (the script name) and its source. */
  name: string;
  source: string;
  /** Every module the entry may import (transitively), by name; resolved beforehand. */
  modules: ReadonlyMap<string, string>;
  /** The handler's ctx argument (JSON-safe; Buffers become Uint8Array). */
  ctx: unknown;
  /** The ctx as JSON text holding no bytes, given instead of `ctx` (its encoding is skipped). */
  ctxJson?: string;
  limits: RunLimits;
  host: HostCall;
  /** Aborting ends the run (shutdown): it fails as internal_error. */
  signal?: AbortSignal;
  /**
   * Called each time the run starts waiting on host I/O or a timer (`parked` true) and when it
   * goes on (false): the worker starts other runs while none executes.
   */
  onPark?: (parked: boolean) => void;
  /**
   * Warm-context key (app, script id, digest of the sources): with a key, a context left clean
   * by a successful run is kept and reused by the next run with the same key and limits. Null or
   * absent: a fresh context, discarded after the run (drafts).
   */
  key?: string | null;
}

/** The abort reason host calls see when their run ended (a ready-made one: abort() alone builds a DOMException per run). */
export const RUN_ENDED = Object.freeze(new Error("The run ended."));

/** Warm contexts one engine (worker) keeps, least recently used first out. */
export const WARM_CONTEXTS_PER_WORKER = 256;
/**
 * A warm context is discarded after this many runs (bounds how long module-level state lives;
 * its memory is bounded by the runtime's limit anyway). Rebuilding one (prelude, web APIs,
 * module) costs a worker milliseconds, so the bound is high enough to make that cost per run
 * negligible (figures: README, warm contexts).
 */
export const WARM_MAX_RUNS = 10_000;

/** The state of one run; the warm context's host functions act for the current one. */
interface RunState {
  stop: FailureKind | null;
  onPark: ((parked: boolean) => void) | undefined;
  ops: number;
  done: boolean;
  deadline: number;
  limits: RunLimits;
  logs: LogEntry[];
  droppedLogs: number;
  waker: Waker;
  /** Made by the run's first SDK call (most runs make none): its signal ends the host's work. */
  abort: AbortController | null;
  live: Set<QuickJSDeferredPromise>;
  pendingHost: number;
  host: HostCall;
  /** Handles that belong to this run only (freed when it ends). */
  handles: QuickJSHandle[];
  halt?: (kind: FailureKind) => void;
  /** Bytes the WASM memory grew by while this run executed, and how much it may (see guardGrowth). */
  grown: number;
  growthBudget: number;
  /** The WASM memory's size no run may grow it past (the engine's `maxWasmBytes`). */
  wasmCeiling: number;
}

/**
 * The run whose JavaScript executes now in this thread's QuickJS module: runs interleave only at
 * their awaits, so whoever (re)starts executing sets it, and memory growth is charged to it.
 */
let executing: RunState | null = null;
const guarded = new WeakSet<object>();

/**
 * QuickJS's own memory limit counts a fixed overhead per allocation in this build (it cannot
 * read an allocation's usable size), not its bytes: an ArrayBuffer's megabytes counted as a few
 * bytes, and a Map's entries as a fraction of their size. What does grow with the bytes is the
 * module's WebAssembly memory, grown by the allocator through the memory object's grow() (JS
 * glue): that call, on this one memory object, is refused once the executing run grew it by more
 * than its memory limit or past the engine's ceiling. The allocation then fails inside QuickJS
 * and the run is stopped with size_limit at that allocation, before the worker's memory balloons.
 */
function guardGrowth(memory: { buffer: ArrayBuffer; grow(pages: number): number }): void {
  if (guarded.has(memory)) return;
  guarded.add(memory);
  const grow = memory.grow.bind(memory);
  memory.grow = (pages: number) => {
    const st = executing;
    if (st && !st.done) {
      const bytes = pages * 65_536;
      if (st.grown + bytes > st.growthBudget || memory.buffer.byteLength + bytes > st.wasmCeiling) {
        st.halt?.("size_limit");
        throw new RangeError("The run's memory limit was reached.");
      }
      st.grown += bytes;
    }
    return grow(pages);
  };
}

/** A runtime + context with the prelude and the entry module evaluated. */
interface WarmContext {
  rt: QuickJSRuntime;
  vm: QuickJSContext;
  name: string;
  marker: string;
  cur: RunState | null;
  runs: number;
  /** Handles that live as long as the context. */
  handles: QuickJSHandle[];
  ns: QuickJSHandle | null;
  runFn: QuickJSHandle;
  internalErrorProto: QuickJSHandle;
  /** Being built with no run (a blank one, see `prepare`): the interrupt handler lets it finish. */
  building: boolean;
}

export const LOG_MAX_ENTRIES = 200;
/** Promise jobs run between two checks of the operation budget and the deadline. */
const JOB_SLICE = 256;
export const LOG_MAX_CHARS = 4096;
const LEVELS = new Set<LogLevel>(["trace", "debug", "info", "warn", "error"]);

/**
 * A one-shot-at-a-time wake-up for the run loop (host I/O completed, deadline passed). Methods on
 * a class: one is built per run.
 */
class Waker {
  private signalled = false;
  private resolve: (() => void) | null = null;
  signal(): void {
    this.signalled = true;
    this.resolve?.();
    this.resolve = null;
  }
  wait(): Promise<void> {
    if (this.signalled) {
      this.signalled = false;
      return Promise.resolve();
    }
    return new Promise((r) => {
      this.resolve = () => {
        this.signalled = false;
        r();
      };
    });
  }
}

class Stop extends Error {}
class GuestThrew extends Error {
  constructor(
    message: string,
    readonly depthOverflow: boolean,
    readonly outOfMemory: boolean,
    readonly detail?: ErrorDetail,
  ) {
    super(message);
  }
}

/** A stack frame in the engine's own sources (newContext's prelude and web APIs, guestError's inspector). */
const INTERNAL_FRAME = /^\s*at .*\((?:sdk-prelude|web-apis|inspect)\.js:\d+(?::\d+)?\)\s*$/;

/** A stack as the script's author should see it: the engine's own frames (prelude, web APIs) left out. */
export function hideInternalFrames(stack: string): string {
  return stack
    .split("\n")
    .filter((line) => !INTERNAL_FRAME.test(line))
    .join("\n");
}

/** The first stack frame in `file` (else the first frame): QuickJS writes `at f (file:line:col)`. */
export function errorPosition(
  stack: string | null,
  file: string,
): { line: number | null; column: number | null } {
  if (!stack) return { line: null, column: null };
  let first: { line: number; column: number } | null = null;
  for (const m of stack.matchAll(/([^\s():]+):(\d+)(?::(\d+))?\)?\s*$/gm)) {
    const pos = { line: Number(m[2]), column: m[3] ? Number(m[3]) : 0 };
    if (m[1] === file) return { line: pos.line, column: pos.column || null };
    first ??= pos;
  }
  return first ? { line: first.line, column: first.column || null } : { line: null, column: null };
}

export type Engine = ReturnType<typeof createEngine>;

export interface EngineDeps {
  clock: EngineClock;
  logger: EngineLog;
  /** Extra prelude (in-sandbox web APIs, see web-apis.ts): `(function (host) {...})` source. */
  webApis?: string;
  /** No run grows the module's WebAssembly memory past this many bytes (default: no ceiling). */
  maxWasmBytes?: number;
  /**
   * Called whenever a run's JavaScript has been executing for a while (the interrupt handler,
   * a full slice of promise jobs): the worker sends the messages it holds back then.
   */
  onBusy?: () => void;
}

/**
 * Runs one endpoint script in a fresh QuickJS runtime and context (one WASM module per process).
 * Limits: memory and stack from the knobs, the operation budget and the deadline in the interrupt
 * handler (which also covers promise jobs), sizes on every value crossing the boundary and on the
 * result. Async SDK calls are host promises; the loop below runs the runtime's pending jobs
 * whenever one of them settles.
 */
export function createEngine(deps: EngineDeps) {
  /**
   * Set once the WASM module aborted (an engine assertion while freeing a run): its memory can no
   * longer be trusted or reused. The pool replaces the worker that holds such an engine.
   */
  let poisoned = false;

  /**
   * Runtimes left allocated instead of freed (see `run`'s finally): their memory stays in this
   * module until the pool recycles the worker (its WASM memory bound), as any grown memory does.
   */
  let abandoned = 0;

  /**
   * Warm contexts of this engine (one per worker thread), by run key + limits: several per key,
   * since runs of one script interleave while parked and a context serves one run at a time.
   */
  const warm = new Map<string, WarmContext[]>();
  let warmCount = 0;

  /** Limits as text for the warm key, once per limits object (a worker reuses one per script). */
  const limitTags = new WeakMap<RunLimits, string>();
  function limitsTag(limits: RunLimits): string {
    let tag = limitTags.get(limits);
    if (tag === undefined) {
      tag = JSON.stringify(limits);
      limitTags.set(limits, tag);
    }
    return tag;
  }

  /** Drop every warm context (a module changed under all of them, or the worker shuts down). */
  function clearWarm(): void {
    for (const ws of warm.values()) for (const w of ws) disposeContext(w);
    warm.clear();
    warmCount = 0;
    for (const w of blanks.splice(0)) disposeContext(w);
  }

  /**
   * Blank contexts: the prelude and the web APIs evaluated, no script, never run. Building one is
   * most of a new context's cost, so a worker builds them while it has nothing to run and a run
   * that needs a new context takes one (it has served nobody: a context still never serves two
   * apps).
   */
  const blanks: WarmContext[] = [];

  /**
   * Build one blank context if fewer than `target` are held; false when there are enough (or the
   * module cannot be trusted any more). Call only while no run executes.
   */
  async function prepare(target: number): Promise<boolean> {
    if (poisoned || blanks.length >= target) return false;
    const mod = await quickJS();
    const was = executing;
    // Growth while building is charged to no run.
    executing = null;
    try {
      blanks.push(buildContext(mod.newRuntime()));
    } finally {
      executing = was;
    }
    return blanks.length < target;
  }

  async function run(req: RunRequest): Promise<RunOutcome> {
    const { clock } = deps;
    const mod = await quickJS();
    const started = clock.now();
    const limits = req.limits;
    const st: RunState = {
      stop: null,
      onPark: req.onPark,
      ops: 0,
      done: false,
      deadline: started + limits.timeoutMs,
      limits,
      logs: [],
      droppedLogs: 0,
      waker: new Waker(),
      abort: null,
      live: new Set(),
      pendingHost: 0,
      host: req.host,
      handles: [],
      grown: 0,
      growthBudget: memoryBytes(limits),
      wasmCeiling: deps.maxWasmBytes ?? Number.POSITIVE_INFINITY,
    };
    guardGrowth(mod.getWasmMemory());
    executing = st;
    const halt = (kind: FailureKind) => {
      st.stop ??= kind;
      st.abort?.abort(RUN_ENDED);
      st.waker.signal();
    };
    st.halt = halt;
    const cacheKey = req.key ? `${req.key}|${limitsTag(limits)}` : null;
    // Taken out while it runs; put back (most recently used) only if the run leaves it clean.
    let w = cacheKey ? takeWarm(cacheKey) : undefined;
    let reusable = false;
    // Set when the run ended inside the engine's own error paths (a limit, out of memory, a host
    // stack overflow): QuickJS may have leaked references there, and freeing such a runtime
    // aborts the whole WASM module on its `gc_obj_list` assertion.
    let abnormal = false;
    const timer = clock.setTimeout(() => halt("timeout"), limits.timeoutMs);
    const onAbort = () => halt("internal_error");
    if (req.signal?.aborted) onAbort();
    req.signal?.addEventListener("abort", onAbort, { once: true });

    const finish = (
      outcome:
        | { ok: true; value: unknown }
        | { ok: false; kind: FailureKind; message: string; detail?: ErrorDetail },
    ) => {
      if (st.droppedLogs > 0)
        st.logs.push({
          level: "warn",
          message: `${st.droppedLogs} log lines dropped (limit ${LOG_MAX_ENTRIES}).`,
          at: clock.iso(),
        });
      return { ...outcome, logs: st.logs, durationMs: clock.now() - started } as RunOutcome;
    };

    try {
      if (w) {
        w.cur = st;
        w.runs++;
      } else {
        w = blanks.pop() ?? buildContext(mod.newRuntime());
        bindContext(w, req);
        w.cur = st;
        w.building = false;
        // The module's top level runs once per context, under the first run's limits.
        w.ns = await settle(w, st, unwrap(w, st, w.vm.evalCode(req.source, req.name, { type: "module" })));
        executing = st;
        w.handles.push(...st.handles.splice(st.handles.indexOf(w.ns)));
      }
      const { vm } = w;
      const keep = <T extends QuickJSHandle>(h: T): T => {
        st.handles.push(h);
        return h;
      };
      const ctxEnc =
        req.ctxJson !== undefined
          ? { json: req.ctxJson, blobs: [] }
          : encodeForGuest(req.ctx, w.marker, limits, false);
      const ctxArgs = [keep(vm.newString(ctxEnc.json))];
      for (const b of ctxEnc.blobs)
        ctxArgs.push(
          keep(vm.newArrayBuffer(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer)),
        );
      const resultArr = await settle(
        w,
        st,
        unwrap(w, st, vm.callFunction(w.runFn, vm.undefined, w.ns as QuickJSHandle, ...ctxArgs)),
      );
      executing = st;
      if (st.stop) throw new Stop();
      // The result crosses the boundary like any SDK value: the guest encoded it; check it here.
      const jsonH = keep(vm.getProp(resultArr, 0));
      const lenH = keep(vm.getProp(resultArr, "length"));
      if (vm.typeof(jsonH) !== "string" || vm.typeof(lenH) !== "number")
        throw new GuestThrew("The handler result could not be read.", false, false);
      const blobs: Uint8Array[] = [];
      const n = Math.min(vm.getNumber(lenH), 1 + limits.max_array_size);
      for (let i = 1; i < n; i++) {
        const bh = keep(vm.getProp(resultArr, i));
        const view = vm.getArrayBuffer(bh);
        blobs.push(Uint8Array.from(view.value));
        view.dispose();
      }
      const value = decodeFromGuest(vm.getString(jsonH), blobs, w.marker, limits);
      if (st.stop) throw new Stop();
      // Reused only when nothing of this run can still execute in a later one (no pending jobs
      // or SDK calls that would run under the next invocation's capability), within N runs.
      reusable = cacheKey !== null && st.pendingHost === 0 && !w.rt.hasPendingJob() && w.runs < WARM_MAX_RUNS;
      return finish({ ok: true, value });
    } catch (err) {
      if (st.stop || err instanceof Stop) {
        const kind = st.stop ?? "internal_error";
        return finish({ ok: false, kind, message: limitMessage(kind) });
      }
      if (err instanceof SizeLimitError)
        return finish({ ok: false, kind: "size_limit", message: err.message });
      if (err instanceof GuestThrew) {
        if (err.depthOverflow)
          return finish({ ok: false, kind: "call_depth_limit", message: limitMessage("call_depth_limit") });
        abnormal = err.outOfMemory;
        if (err.outOfMemory)
          return finish({ ok: false, kind: "size_limit", message: limitMessage("size_limit") });
        return finish({
          ok: false,
          kind: "script_error",
          message: err.message,
          ...(err.detail ? { detail: err.detail } : {}),
        });
      }
      // A WASM trap, or V8's stack overflow thrown through QuickJS's C frames (a deep native
      // recursion such as JSON.stringify of a 1e6-deep object): the module's state is unknown.
      if (err instanceof Error && (err.name === "RuntimeError" || err instanceof RangeError)) poisoned = true;
      abnormal = true;
      deps.logger.error({ err }, "script engine failure");
      return finish({ ok: false, kind: "internal_error", message: "The script engine failed." });
    } finally {
      st.done = true;
      if (executing === st) executing = null;
      timer.cancel();
      req.signal?.removeEventListener("abort", onAbort);
      st.abort?.abort(RUN_ENDED);
      try {
        // A poisoned module is replaced whole: nothing in it is freed.
        if (!poisoned) {
          for (const d of st.live) if (d.alive) d.dispose();
          for (const h of st.handles.reverse()) if (h.alive) h.dispose();
        }
        if (w) {
          w.cur = null;
          if (reusable && cacheKey) keepWarm(cacheKey, w);
          else if (abnormal || st.stop || poisoned) abandon(w);
          else disposeContext(w);
        }
      } catch (err) {
        // QuickJS aborts the WASM module when a runtime it frees is inconsistent (a limit hit
        // deep inside a builtin): the outcome stands, but this module must not run again.
        poisoned = true;
        deps.logger.error({ err }, "the script engine could not free a run");
      }
    }
  }

  function takeWarm(key: string): WarmContext | undefined {
    const ws = warm.get(key);
    const w = ws?.pop();
    if (!ws || !w) return undefined;
    warmCount--;
    if (ws.length === 0) warm.delete(key);
    return w;
  }

  function keepWarm(key: string, w: WarmContext): void {
    const ws = warm.get(key) ?? [];
    // Most recently used key last in the map's order, the least recently used evicted first.
    warm.delete(key);
    warm.set(key, ws);
    ws.push(w);
    warmCount++;
    while (warmCount > WARM_CONTEXTS_PER_WORKER) {
      const oldest = warm.keys().next().value as string;
      const os = warm.get(oldest) as WarmContext[];
      const o = os.shift() as WarmContext;
      if (os.length === 0) warm.delete(oldest);
      warmCount--;
      disposeContext(o);
    }
  }

  /** Leave a runtime allocated: its handles go, the runtime and context are never freed. */
  function abandon(w: WarmContext): void {
    if (!poisoned) for (const h of w.handles.reverse()) if (h.alive) h.dispose();
    abandoned++;
  }

  function disposeContext(w: WarmContext): void {
    for (const h of w.handles.reverse()) if (h.alive) h.dispose();
    w.vm.dispose();
    w.rt.dispose();
  }

  function unwrap(w: WarmContext, st: RunState, r: ReturnType<QuickJSContext["evalCode"]>): QuickJSHandle {
    if (r.error) {
      st.handles.push(r.error);
      if (st.stop) throw new Stop();
      throw guestError(w.vm, r.error, w.internalErrorProto, w.name);
    }
    st.handles.push(r.value);
    return r.value;
  }

  /** Settle a possibly-promise handle, running jobs and waiting on host I/O as needed. */
  async function settle(w: WarmContext, st: RunState, h: QuickJSHandle): Promise<QuickJSHandle> {
    const { vm, rt } = w;
    for (;;) {
      if (st.stop) throw new Stop();
      // In slices, each job counted against the operation budget (OPS_PER_JOB) and the deadline
      // checked between them: a job loop polls the interrupt handler too rarely to be stopped
      // on time by it alone.
      const jobs = rt.executePendingJobs(JOB_SLICE);
      if (!jobs.error && jobs.value > 0) {
        st.ops += jobs.value * OPS_PER_JOB;
        if (st.ops > st.limits.max_operations) st.halt?.("operation_limit");
        else if (jobs.value >= JOB_SLICE && deps.clock.now() >= st.deadline) st.halt?.("timeout");
        if (st.stop) throw new Stop();
        if (jobs.value >= JOB_SLICE) {
          deps.onBusy?.();
          continue;
        }
      }
      if (jobs.error) {
        // A job fails at the engine level only with what a script cannot catch (its own throws
        // reject promises instead): an interrupt, out of memory, a stack overflow. Name the limit;
        // dropping it would leave the handler pending and answer "never settled".
        st.handles.push(jobs.error);
        if (st.stop) throw new Stop();
        // Past its memory limit QuickJS cannot even build an error object and throws null.
        if (vm.typeof(jobs.error) === "object" && vm.dump(jobs.error) === null)
          throw new GuestThrew("InternalError: out of memory", false, true);
        throw guestError(vm, jobs.error, w.internalErrorProto, w.name);
      }
      if (st.stop) throw new Stop();
      const ps = vm.getPromiseState(h);
      if (ps.type === "fulfilled") {
        if (ps.notAPromise) return h;
        st.handles.push(ps.value);
        return ps.value;
      }
      if (ps.type === "rejected") {
        st.handles.push(ps.error);
        throw guestError(vm, ps.error, w.internalErrorProto, w.name);
      }
      if (st.pendingHost === 0 && !rt.hasPendingJob())
        throw new GuestThrew("The handler's promise never settled.", false, false);
      st.onPark?.(true);
      await st.waker.wait();
      executing = st;
      st.onPark?.(false);
    }
  }

  /**
   * A new runtime + context with the SDK prelude (and the web APIs) evaluated. Its host functions
   * act for whichever run is current (`w.cur`): the capability comes with each invocation.
   */
  /** A new context's first run: its limits, its modules and its name. */
  function bindContext(w: WarmContext, req: RunRequest): void {
    w.rt.setMemoryLimit(memoryBytes(req.limits));
    w.rt.setMaxStackSize(stackBytes(req.limits));
    w.name = req.name;
    w.rt.setModuleLoader(
      (name) => {
        const src = req.modules.get(name);
        return src === undefined ? { error: new Error(`Module "${name}" is not available.`) } : src;
      },
      (_base, requested) => requested,
    );
  }

  /**
   * A new runtime + context with the SDK prelude (and the web APIs) evaluated, bound to no run
   * yet (bindContext): built under the default limits, which a run's own replace.
   */
  function buildContext(rt: QuickJSRuntime): WarmContext {
    const { clock } = deps;
    rt.setMemoryLimit(memoryBytes(SANDBOX_DEFAULTS));
    rt.setMaxStackSize(stackBytes(SANDBOX_DEFAULTS));
    const vm = rt.newContext();
    // Passed to the guest as a C string: no NUL characters.
    const marker = `__blob_${randomBytes(8).toString("hex")}`;
    const w: WarmContext = {
      rt,
      vm,
      name: "",
      marker,
      cur: null,
      runs: 1,
      handles: [],
      ns: null,
      runFn: vm.undefined,
      internalErrorProto: vm.undefined,
      building: true,
    };
    const keep = <T extends QuickJSHandle>(h: T): T => {
      w.handles.push(h);
      return h;
    };
    const onBusy = deps.onBusy;
    rt.setInterruptHandler(() => {
      onBusy?.();
      const st = w.cur;
      if (!st) return !w.building;
      if (st.stop) return true;
      st.ops += OPS_PER_INTERRUPT;
      if (st.ops > st.limits.max_operations) {
        st.halt?.("operation_limit");
        return true;
      }
      if (clock.now() >= st.deadline) {
        st.halt?.("timeout");
        return true;
      }
      return false;
    });
    try {
      // The engine's own InternalError prototype: real stack overflows and out-of-memory errors
      // carry it. The prelude removes the global so a script cannot build one and fake a limit.
      const internalErrorCtor = keep(vm.getProp(vm.global, "InternalError"));
      w.internalErrorProto = keep(vm.getProp(internalErrorCtor, "prototype"));

      const hostLog = keep(
        vm.newFunction("hostLog", (levelH, textH) => {
          const st = w.cur;
          if (!st) return;
          if (vm.typeof(levelH) !== "string" || vm.typeof(textH) !== "string") return;
          const level = vm.getString(levelH) as LogLevel;
          if (!LEVELS.has(level)) return;
          if (st.logs.length >= LOG_MAX_ENTRIES) {
            st.droppedLogs++;
            return;
          }
          const text = vm.getString(textH);
          const message = text.length > LOG_MAX_CHARS ? `${text.slice(0, LOG_MAX_CHARS)}…` : text;
          st.logs.push({ level, message, at: clock.iso() });
        }),
      );
      const hostCall = keep(
        vm.newFunction("hostCall", (opH, jsonH, ...blobHs) => callHost(w, opH, jsonH, blobHs)),
      );
      const hostRandom = keep(
        vm.newFunction("hostRandom", (nH) => {
          const n = vm.typeof(nH) === "number" ? Math.floor(vm.getNumber(nH)) : 0;
          if (!(n >= 0 && n <= 65_536)) throw new ScriptVisibleError("randomBytes: at most 65536 bytes.");
          const b = randomBytes(n);
          return vm.newArrayBuffer(b.buffer.slice(b.byteOffset, b.byteOffset + n) as ArrayBuffer);
        }),
      );
      const evalKept = (code: string, file: string) => {
        const r = vm.evalCode(code, file, { type: "global", strict: true });
        if (r.error) {
          keep(r.error);
          throw guestError(vm, r.error, w.internalErrorProto, w.name);
        }
        return keep(r.value);
      };
      const preludeFn = evalKept(PRELUDE_SOURCE, "sdk-prelude.js");
      const webApis = deps.webApis ? evalKept(deps.webApis, "web-apis.js") : vm.undefined;
      const r = vm.callFunction(
        preludeFn,
        vm.undefined,
        hostCall,
        hostLog,
        keep(vm.newString(marker)),
        hostRandom,
        webApis,
      );
      if (r.error) {
        keep(r.error);
        throw guestError(vm, r.error, w.internalErrorProto, w.name);
      }
      w.runFn = keep(r.value);
      return w;
    } catch (err) {
      w.cur = null;
      try {
        disposeContext(w);
      } catch {
        poisoned = true;
      }
      throw err;
    }
  }

  /** One guest SDK call: decoded and size-checked here, answered by the current run's host. */
  function callHost(
    w: WarmContext,
    opH: QuickJSHandle,
    jsonH: QuickJSHandle,
    blobHs: QuickJSHandle[],
  ): QuickJSHandle {
    const { vm } = w;
    const st = w.cur;
    const deferred = vm.newPromise();
    if (!st) {
      const errH = vm.newError({ name: "Error", message: "The run ended." });
      deferred.reject(errH);
      errH.dispose();
      const h = deferred.handle;
      return h;
    }
    st.live.add(deferred);
    st.pendingHost++;
    let op = "";
    let args: unknown[] = [];
    let early: unknown = null;
    try {
      if (vm.typeof(opH) !== "string" || vm.typeof(jsonH) !== "string")
        throw new ScriptVisibleError("Malformed SDK call.");
      op = vm.getString(opH);
      const blobs = blobHs.map((h) => {
        const view = vm.getArrayBuffer(h);
        try {
          return Uint8Array.from(view.value);
        } finally {
          view.dispose();
        }
      });
      const decoded = decodeFromGuest(vm.getString(jsonH), blobs, w.marker, st.limits);
      if (!Array.isArray(decoded)) throw new ScriptVisibleError("Malformed SDK call.");
      args = decoded;
    } catch (err) {
      early = err;
    }
    void (async () => {
      let value: unknown;
      let failure: unknown = early;
      if (!failure) {
        try {
          // A run already stopped gets an aborted signal at once.
          st.abort ??= new AbortController();
          if (st.done || st.stop) st.abort.abort(RUN_ENDED);
          value = await st.host(op, args, st.abort.signal);
        } catch (err) {
          failure = err;
        }
      }
      // The reply's guest values are this run's memory, whichever run executed last.
      executing = st;
      try {
        if (st.done) return;
        if (!failure) {
          try {
            const enc = encodeForGuest(value, w.marker, st.limits);
            const arr = vm.newArray();
            vm.setProp(arr, 0, vm.newString(enc.json));
            enc.blobs.forEach((b, i) => {
              const copy = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
              const ab = vm.newArrayBuffer(copy);
              vm.setProp(arr, i + 1, ab);
              ab.dispose();
            });
            deferred.resolve(arr);
            arr.dispose();
            return;
          } catch (err) {
            failure = err;
          }
        }
        if (failure instanceof SizeLimitError) st.halt?.("size_limit");
        const message =
          failure instanceof ScriptVisibleError
            ? failure.message
            : failure instanceof SizeLimitError
              ? failure.message
              : `Internal error in ${op || "an SDK call"}.`;
        if (!(failure instanceof ScriptVisibleError) && !(failure instanceof SizeLimitError))
          deps.logger.error({ err: failure, op }, "SDK call failed");
        const errH = vm.newError({ name: "Error", message });
        if (failure instanceof ScriptVisibleError && failure.code)
          vm.setProp(errH, "code", vm.newString(failure.code));
        deferred.reject(errH);
        errH.dispose();
      } finally {
        st.pendingHost--;
        if (!st.done) {
          st.live.delete(deferred);
          deferred.dispose();
        }
        st.waker.signal();
      }
    })();
    return deferred.handle;
  }

  /** Describe a thrown guest value; engine limit errors are recognised by prototype identity. */
  function guestError(
    vm: QuickJSContext,
    errH: QuickJSHandle,
    internalErrorProto: QuickJSHandle,
    file: string,
  ): GuestThrew {
    let isInternal = false;
    /** The inspection itself could not run: only memory exhaustion makes that constant snippet fail. */
    let noMemory = false;
    let stack: string | null = null;
    let name = "Error";
    let message = "";
    if (vm.typeof(errH) === "object") {
      // Object.getPrototypeOf without running guest code (no getters, no proxies' traps).
      const protoResult = vm.evalCode("(o) => Object.getPrototypeOf(o)", "inspect.js", { type: "global" });
      if (!protoResult.error) {
        const r = vm.callFunction(protoResult.value, vm.undefined, errH);
        protoResult.value.dispose();
        if (!r.error) {
          isInternal = vm.sameValue(r.value, internalErrorProto);
          r.value.dispose();
        } else {
          r.error.dispose();
          noMemory = true;
        }
      } else {
        protoResult.error.dispose();
        noMemory = true;
      }
      name = readString(vm, errH, "name") ?? "Error";
      message = readString(vm, errH, "message") ?? "";
      const raw = readString(vm, errH, "stack");
      stack = raw === undefined ? null : hideInternalFrames(raw);
    } else {
      const d = vm.dump(errH);
      message = typeof d === "string" ? d : (JSON.stringify(d) ?? String(d));
    }
    const depthOverflow = isInternal && message === "stack overflow";
    // QuickJS's own size errors: the heap limit, and a string past its maximum length (`s += s`).
    const outOfMemory =
      noMemory || (isInternal && (message === "out of memory" || message === "string too long"));
    // Never an empty "Error: ": a script may throw an error without a message, or a non-error.
    const text = message ? `${name}: ${message}` : `${name} (thrown without a message)`;
    if (stack && stack.length > 4000) stack = `${stack.slice(0, 4000)}…`;
    return new GuestThrew(text.length > 1000 ? `${text.slice(0, 1000)}…` : text, depthOverflow, outOfMemory, {
      stack,
      ...errorPosition(stack, file),
    });
  }

  return {
    /** The WASM module can no longer be trusted (see `poisoned` above): the pool replaces the worker. */
    get poisoned(): boolean {
      return poisoned;
    },
    /** Runtimes left allocated instead of freed (see `run`'s finally). */
    get abandoned(): number {
      return abandoned;
    },
    /** How many warm contexts this engine holds now (tests, metrics). */
    get warmContexts(): number {
      return warmCount;
    },
    /** How many blank contexts this engine holds now (tests, metrics). */
    get blankContexts(): number {
      return blanks.length;
    },
    clearWarm,
    prepare,
    run,
  };
}

function readString(vm: QuickJSContext, h: QuickJSHandle, key: string): string | undefined {
  let r: QuickJSHandle;
  try {
    r = vm.getProp(h, key); // may run a guest getter, which may throw
  } catch {
    return undefined;
  }
  try {
    return vm.typeof(r) === "string" ? vm.getString(r) : undefined;
  } finally {
    r.dispose();
  }
}

export function limitMessage(kind: FailureKind): string {
  switch (kind) {
    case "timeout":
      return "The script ran past its time limit.";
    case "operation_limit":
      return "The script exceeded its operation budget.";
    case "size_limit":
      return "The script exceeded a size or memory limit.";
    case "call_depth_limit":
      return "The script exceeded its call depth limit.";
    default:
      return "The script engine failed.";
  }
}
