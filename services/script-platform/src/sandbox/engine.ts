import { randomBytes } from "node:crypto";
import type { Clock } from "@app/kit/clock";
import type { QuickJSContext, QuickJSDeferredPromise, QuickJSHandle } from "quickjs-emscripten-core";
import { decodeFromGuest, encodeForGuest, SizeLimitError } from "./boundary.js";
import { memoryBytes, OPS_PER_INTERRUPT, type RunLimits, stackBytes } from "./limits.js";
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
  limits: RunLimits;
  host: HostCall;
  /** Aborting ends the run (shutdown): it fails as internal_error. */
  signal?: AbortSignal;
}

export const LOG_MAX_ENTRIES = 200;
export const LOG_MAX_CHARS = 4096;
const LEVELS = new Set<LogLevel>(["trace", "debug", "info", "warn", "error"]);

/** A one-shot-at-a-time wake-up for the run loop (host I/O completed, deadline passed). */
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

/**
 * Runs one endpoint script in a fresh QuickJS runtime and context (one WASM module per process).
 * Limits: memory and stack from the knobs, the operation budget and the deadline in the interrupt
 * handler (which also covers promise jobs), sizes on every value crossing the boundary and on the
 * result. Async SDK calls are host promises; the loop below runs the runtime's pending jobs
 * whenever one of them settles.
 */
export class Engine {
  /**
   * Set once the WASM module aborted (an engine assertion while freeing a run): its memory can no
   * longer be trusted or reused. The pool replaces the worker that holds such an engine.
   */
  poisoned = false;

  constructor(
    private readonly deps: {
      clock: EngineClock;
      logger: EngineLog;
      /** Extra prelude (in-sandbox web APIs, see web-apis.ts): `(function (host) {...})` source. */
      webApis?: string;
    },
  ) {}

  async run(req: RunRequest): Promise<RunOutcome> {
    const { clock } = this.deps;
    const mod = await quickJS();
    const started = clock.now();
    const limits = req.limits;
    const logs: LogEntry[] = [];
    let droppedLogs = 0;
    const state: { stop: FailureKind | null; ops: number; done: boolean } = {
      stop: null,
      ops: 0,
      done: false,
    };
    const deadline = started + limits.timeoutMs;
    const waker = new Waker();
    const abort = new AbortController();
    const live = new Set<QuickJSDeferredPromise>();
    let pendingHost = 0;
    // Passed to the guest as a C string: no NUL characters.
    const marker = `__blob_${randomBytes(8).toString("hex")}`;
    const halt = (kind: FailureKind) => {
      state.stop ??= kind;
      abort.abort();
      waker.signal();
    };

    const rt = mod.newRuntime();
    rt.setMemoryLimit(memoryBytes(limits));
    rt.setMaxStackSize(stackBytes(limits));
    rt.setInterruptHandler(() => {
      if (state.stop) return true;
      state.ops += OPS_PER_INTERRUPT;
      if (state.ops > limits.max_operations) {
        halt("operation_limit");
        return true;
      }
      if (clock.now() >= deadline) {
        halt("timeout");
        return true;
      }
      return false;
    });
    rt.setModuleLoader(
      (name) => {
        const src = req.modules.get(name);
        return src === undefined ? { error: new Error(`Module "${name}" is not available.`) } : src;
      },
      (_base, requested) => requested,
    );
    const vm = rt.newContext();
    const timer = clock.setTimeout(() => halt("timeout"), limits.timeoutMs);
    const onAbort = () => halt("internal_error");
    if (req.signal?.aborted) onAbort();
    req.signal?.addEventListener("abort", onAbort, { once: true });
    const handles: QuickJSHandle[] = [];
    const keep = <T extends QuickJSHandle>(h: T): T => {
      handles.push(h);
      return h;
    };

    const finish = (
      outcome: { ok: true; value: unknown } | { ok: false; kind: FailureKind; message: string },
    ) => {
      if (droppedLogs > 0)
        logs.push({
          level: "warn",
          message: `${droppedLogs} log lines dropped (limit ${LOG_MAX_ENTRIES}).`,
          at: clock.iso(),
        });
      return { ...outcome, logs, durationMs: clock.now() - started } as RunOutcome;
    };

    try {
      // The engine's own InternalError prototype: real stack overflows and out-of-memory errors
      // carry it. The prelude removes the global so a script cannot build one and fake a limit.
      const internalErrorCtor = keep(vm.getProp(vm.global, "InternalError"));
      const internalErrorProto = keep(vm.getProp(internalErrorCtor, "prototype"));

      const hostLog = keep(
        vm.newFunction("hostLog", (levelH, textH) => {
          if (vm.typeof(levelH) !== "string" || vm.typeof(textH) !== "string") return;
          const level = vm.getString(levelH) as LogLevel;
          if (!LEVELS.has(level)) return;
          if (logs.length >= LOG_MAX_ENTRIES) {
            droppedLogs++;
            return;
          }
          const text = vm.getString(textH);
          const message = text.length > LOG_MAX_CHARS ? `${text.slice(0, LOG_MAX_CHARS)}…` : text;
          logs.push({ level, message, at: clock.iso() });
        }),
      );
      const hostCall = keep(
        vm.newFunction("hostCall", (opH, jsonH, ...blobHs) => {
          const deferred = vm.newPromise();
          live.add(deferred);
          pendingHost++;
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
            const decoded = decodeFromGuest(vm.getString(jsonH), blobs, marker, limits);
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
                value = await req.host(op, args, abort.signal);
              } catch (err) {
                failure = err;
              }
            }
            try {
              if (state.done) return;
              if (!failure) {
                try {
                  const enc = encodeForGuest(value, marker, limits);
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
              if (failure instanceof SizeLimitError) halt("size_limit");
              const message =
                failure instanceof ScriptVisibleError
                  ? failure.message
                  : failure instanceof SizeLimitError
                    ? failure.message
                    : `Internal error in ${op || "an SDK call"}.`;
              if (!(failure instanceof ScriptVisibleError) && !(failure instanceof SizeLimitError))
                this.deps.logger.error({ err: failure, op }, "SDK call failed");
              const errH = vm.newError({ name: "Error", message });
              if (failure instanceof ScriptVisibleError && failure.code)
                vm.setProp(errH, "code", vm.newString(failure.code));
              deferred.reject(errH);
              errH.dispose();
            } finally {
              pendingHost--;
              if (!state.done) {
                live.delete(deferred);
                deferred.dispose();
              }
              waker.signal();
            }
          })();
          return deferred.handle;
        }),
      );

      const hostRandom = keep(
        vm.newFunction("hostRandom", (nH) => {
          const n = vm.typeof(nH) === "number" ? Math.floor(vm.getNumber(nH)) : 0;
          if (!(n >= 0 && n <= 65_536)) throw new ScriptVisibleError("randomBytes: at most 65536 bytes.");
          const b = randomBytes(n);
          return vm.newArrayBuffer(b.buffer.slice(b.byteOffset, b.byteOffset + n) as ArrayBuffer);
        }),
      );

      // Settle a possibly-promise handle, running jobs and waiting on host I/O as needed.
      const settle = async (h: QuickJSHandle): Promise<QuickJSHandle> => {
        for (;;) {
          if (state.stop) throw new Stop();
          const jobs = rt.executePendingJobs();
          if (jobs.error) jobs.error.dispose();
          if (state.stop) throw new Stop();
          const ps = vm.getPromiseState(h);
          if (ps.type === "fulfilled") return ps.notAPromise ? h : keep(ps.value);
          if (ps.type === "rejected") throw this.guestError(vm, keep(ps.error), internalErrorProto, req.name);
          if (pendingHost === 0 && !rt.hasPendingJob())
            throw new GuestThrew("The handler's promise never settled.", false, false);
          await waker.wait();
        }
      };
      const unwrap = (r: ReturnType<QuickJSContext["evalCode"]>): QuickJSHandle => {
        if (r.error) {
          const e = keep(r.error);
          if (state.stop) throw new Stop();
          throw this.guestError(vm, e, internalErrorProto, req.name);
        }
        return keep(r.value);
      };

      const preludeFn = unwrap(
        vm.evalCode(PRELUDE_SOURCE, "sdk-prelude.js", { type: "global", strict: true }),
      );
      const webApis = this.deps.webApis
        ? unwrap(vm.evalCode(this.deps.webApis, "web-apis.js", { type: "global", strict: true }))
        : vm.undefined;
      const runFn = unwrap(
        vm.callFunction(
          preludeFn,
          vm.undefined,
          hostCall,
          hostLog,
          keep(vm.newString(marker)),
          hostRandom,
          webApis,
        ),
      );
      const ns = await settle(unwrap(vm.evalCode(req.source, req.name, { type: "module" })));
      const ctxEnc = encodeForGuest(req.ctx, marker, limits, false);
      const ctxArgs = [keep(vm.newString(ctxEnc.json))];
      for (const b of ctxEnc.blobs)
        ctxArgs.push(
          keep(vm.newArrayBuffer(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer)),
        );
      const resultArr = await settle(unwrap(vm.callFunction(runFn, vm.undefined, ns, ...ctxArgs)));
      if (state.stop) throw new Stop();
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
      const value = decodeFromGuest(vm.getString(jsonH), blobs, marker, limits);
      if (state.stop) throw new Stop();
      return finish({ ok: true, value });
    } catch (err) {
      if (state.stop || err instanceof Stop) {
        const kind = state.stop ?? "internal_error";
        return finish({ ok: false, kind, message: limitMessage(kind) });
      }
      if (err instanceof SizeLimitError)
        return finish({ ok: false, kind: "size_limit", message: err.message });
      if (err instanceof GuestThrew) {
        if (err.depthOverflow)
          return finish({ ok: false, kind: "call_depth_limit", message: limitMessage("call_depth_limit") });
        if (err.outOfMemory)
          return finish({ ok: false, kind: "size_limit", message: limitMessage("size_limit") });
        return finish({
          ok: false,
          kind: "script_error",
          message: err.message,
          ...(err.detail ? { detail: err.detail } : {}),
        });
      }
      if (err instanceof Error && err.name === "RuntimeError") this.poisoned = true; // a WASM trap
      this.deps.logger.error({ err }, "script engine failure");
      return finish({ ok: false, kind: "internal_error", message: "The script engine failed." });
    } finally {
      state.done = true;
      timer.cancel();
      req.signal?.removeEventListener("abort", onAbort);
      abort.abort();
      try {
        for (const d of live) if (d.alive) d.dispose();
        for (const h of handles.reverse()) if (h.alive) h.dispose();
        vm.dispose();
        rt.dispose();
      } catch (err) {
        // QuickJS aborts the WASM module when a runtime it frees is inconsistent (a limit hit
        // deep inside a builtin): the outcome stands, but this module must not run again.
        this.poisoned = true;
        this.deps.logger.error({ err }, "the script engine could not free a run");
      }
    }
  }

  /** Describe a thrown guest value; engine limit errors are recognised by prototype identity. */
  private guestError(
    vm: QuickJSContext,
    errH: QuickJSHandle,
    internalErrorProto: QuickJSHandle,
    file: string,
  ): GuestThrew {
    let isInternal = false;
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
        } else r.error.dispose();
      } else protoResult.error.dispose();
      name = readString(vm, errH, "name") ?? "Error";
      message = readString(vm, errH, "message") ?? "";
      stack = readString(vm, errH, "stack") ?? null;
    } else {
      const d = vm.dump(errH);
      message = typeof d === "string" ? d : (JSON.stringify(d) ?? String(d));
    }
    const depthOverflow = isInternal && message === "stack overflow";
    const outOfMemory = isInternal && message === "out of memory";
    // Never an empty "Error: ": a script may throw an error without a message, or a non-error.
    const text = message ? `${name}: ${message}` : `${name} (thrown without a message)`;
    if (stack && stack.length > 4000) stack = `${stack.slice(0, 4000)}…`;
    return new GuestThrew(text.length > 1000 ? `${text.slice(0, 1000)}…` : text, depthOverflow, outOfMemory, {
      stack,
      ...errorPosition(stack, file),
    });
  }
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
