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
import { compileQuickJS } from "./quickjs.js";
import type { FromWorker, ToWorker, WireError } from "./worker.js";

/**
 * The pool of sandbox worker threads. Each worker loads its own QuickJS WebAssembly module and
 * runs one script at a time; the main thread keeps HTTP, the database and the outbox, and answers
 * the workers' SDK calls. Written by hand rather than with piscina: a run here is a conversation
 * (SDK calls flow back while it runs), runs prefer the worker that served the same script
 * version before, and the watchdog must terminate the one worker whose run overstayed; piscina's
 * task model gives none of the three without working around it.
 *
 * Guarantees:
 * - a run answers by its deadline + `graceMs` even when its worker is stuck inside one native
 *   call: the watchdog terminates that worker (freeing its WASM memory) and starts a replacement;
 * - at most `appConcurrency` runs of one app at once, so one app never holds every worker; other
 *   runs wait in FIFO order, and a run with `waitMs` that finds no slot in time fails as `busy`;
 * - at most `sdkCallsInFlight` SDK calls pending per run and `sdkCallsPerRun` in total: beyond
 *   them the call rejects inside the script with a catchable error (`code` sdk_busy / sdk_limit);
 * - a worker whose WASM module aborted, or whose memory grew past `recycleWasmBytes` (WASM memory
 *   never shrinks), is replaced after its run, so memory a script forced up returns.
 */
export interface PoolOptions {
  workers: number;
  appConcurrency: number;
  sdkCallsInFlight: number;
  sdkCallsPerRun: number;
  clock: Clock;
  logger: Logger;
  /** Watchdog slack past a run's own deadline (the worker's interrupt handler normally ends it first). */
  graceMs?: number;
  /** Replace a worker after a run that left its WASM memory above this. */
  recycleWasmBytes?: number;
}

export interface PoolRun {
  appId: string;
  /** Warm-context affinity: (app, script id, version); null for runs that must not be cached (drafts). */
  key: string | null;
  name: string;
  source: string;
  modules: ReadonlyMap<string, string>;
  ctx: unknown;
  limits: RunLimits;
  host: HostCall;
  /** Aborting ends the run at once (shutdown): it fails as internal_error. */
  signal?: AbortSignal;
  /** How long the run may wait for a slot (its app's cap, a free worker) before failing as busy. */
  waitMs?: number;
}

export const DEFAULT_GRACE_MS = 50;

export const DEFAULT_RECYCLE_WASM_BYTES = 96 * 1024 * 1024;

interface Pending {
  req: PoolRun;
  resolve(o: RunOutcome): void;
  waitTimer: TimerHandle | null;
  /** Handed to a worker (no longer waiting). */
  placed: boolean;
}

interface Active {
  id: number;
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
  active: Active | null;
  /** Script versions this worker served recently (affinity for warm contexts). */
  recent: string[];
  gone: boolean;
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

export class EnginePool {
  private readonly slots: Slot[] = [];
  private readonly queue: Pending[] = [];
  private readonly perApp = new Map<string, number>();
  private seq = 0;
  private closed = false;
  private readonly graceMs: number;
  private readonly recycleWasmBytes: number;

  /** Start the pool: the workers begin loading at once (await ready() to wait for them). */
  static async start(opts: PoolOptions): Promise<EnginePool> {
    const [entry, wasm] = await Promise.all([workerEntry(), compileQuickJS()]);
    return new EnginePool(opts, entry, wasm);
  }

  private constructor(
    private readonly opts: PoolOptions,
    private readonly entry: URL,
    private readonly wasm: WebAssembly.Module,
  ) {
    this.graceMs = opts.graceMs ?? DEFAULT_GRACE_MS;
    this.recycleWasmBytes = opts.recycleWasmBytes ?? DEFAULT_RECYCLE_WASM_BYTES;
    for (let i = 0; i < Math.max(1, opts.workers); i++) this.slots.push(this.spawn());
  }

  /** Workers in the pool and how many are running a script now (the metrics gauge). */
  get size(): number {
    return this.slots.length;
  }
  get busy(): number {
    return this.slots.filter((s) => s.active).length;
  }
  /** Runs waiting for a slot. */
  get waiting(): number {
    return this.queue.length;
  }
  /** Workers started since the pool was built beyond the initial ones (tests, metrics). */
  replaced = 0;

  /** Resolves once every worker has loaded its WASM module. */
  async ready(): Promise<void> {
    await Promise.all(
      this.slots.map(
        (s) =>
          new Promise<void>((resolve) => {
            if (s.ready) return resolve();
            const on = (m: FromWorker) => {
              if (m.t !== "ready") return;
              s.worker.off("message", on);
              resolve();
            };
            s.worker.on("message", on);
          }),
      ),
    );
  }

  run(req: PoolRun): Promise<RunOutcome> {
    if (this.closed)
      return Promise.resolve(this.failure("internal_error", "The script engine is shutting down.", 0));
    return new Promise((resolve) => {
      const p: Pending = { req, resolve, waitTimer: null, placed: false };
      const waitMs = req.waitMs;
      const expire = () => {
        const i = this.queue.indexOf(p);
        if (i < 0) return;
        // A worker being replaced is not the app's fault: keep waiting for it (the caller's own
        // deadline still bounds the wait); busy is for an app at its cap or a pool full of runs.
        const atCap = (this.perApp.get(req.appId) ?? 0) >= this.opts.appConcurrency;
        if (!atCap && this.slots.some((s) => !s.ready && !s.gone) && waitMs !== undefined) {
          p.waitTimer = this.opts.clock.setTimeout(expire, waitMs);
          return;
        }
        this.queue.splice(i, 1);
        resolve(this.failure("busy", "Too many scripts of this app are running; try again shortly.", 0));
      };
      this.queue.push(p);
      this.pump();
      // Only a run that found no slot needs its wait bounded (most runs start at once).
      if (waitMs !== undefined && Number.isFinite(waitMs) && !p.placed)
        p.waitTimer = this.opts.clock.setTimeout(expire, waitMs);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.queue.splice(0)) {
      p.waitTimer?.cancel();
      p.resolve(this.failure("internal_error", "The script engine is shutting down.", 0));
    }
    await Promise.all(
      this.slots.map(async (s) => {
        if (s.active)
          this.finish(s, this.failure("internal_error", "The script engine is shutting down.", 0));
        s.gone = true;
        await s.worker.terminate();
      }),
    );
  }

  private failure(kind: FailureKind, message: string, durationMs: number): RunOutcome {
    return { ok: false, kind, message, logs: [], durationMs };
  }

  private spawn(): Slot {
    const worker = new Worker(this.entry, { workerData: { wasm: this.wasm } });
    const slot: Slot = { worker, ready: false, active: null, recent: [], gone: false };
    worker.on("message", (m: FromWorker) => this.onMessage(slot, m));
    worker.on("error", (err) => {
      this.opts.logger.error({ err }, "sandbox worker failed");
      this.lost(slot);
    });
    worker.on("exit", () => this.lost(slot));
    return slot;
  }

  /** A worker ended without being asked to: fail its run and start a replacement. */
  private lost(slot: Slot): void {
    if (slot.gone) return;
    if (slot.active)
      this.finish(
        slot,
        this.failure("internal_error", "The script engine stopped unexpectedly.", this.elapsed(slot)),
      );
    this.replace(slot);
  }

  private elapsed(slot: Slot): number {
    return slot.active ? this.opts.clock.now() - slot.active.started : 0;
  }

  private replace(slot: Slot): void {
    slot.gone = true;
    void slot.worker.terminate();
    const i = this.slots.indexOf(slot);
    if (i < 0 || this.closed) return;
    this.slots[i] = this.spawn();
    this.replaced++;
  }

  private pump(): void {
    if (this.closed) return;
    for (let i = 0; i < this.queue.length; ) {
      const p = this.queue[i] as Pending;
      if ((this.perApp.get(p.req.appId) ?? 0) >= this.opts.appConcurrency) {
        i++;
        continue;
      }
      const idle = this.slots.filter((s) => s.ready && !s.active && !s.gone);
      if (idle.length === 0) return;
      const key = p.req.key;
      const slot = (key ? idle.find((s) => s.recent.includes(key)) : undefined) ?? (idle[0] as Slot);
      this.queue.splice(i, 1);
      p.placed = true;
      p.waitTimer?.cancel();
      this.assign(slot, p);
    }
  }

  private assign(slot: Slot, p: Pending): void {
    const { req } = p;
    const id = ++this.seq;
    this.perApp.set(req.appId, (this.perApp.get(req.appId) ?? 0) + 1);
    const active: Active = {
      id,
      req,
      resolve: p.resolve,
      started: this.opts.clock.now(),
      // The hard limit: past the deadline and the grace the worker is stuck (one native call the
      // interrupt handler cannot reach); end the run now and replace the worker.
      watchdog: this.opts.clock.setTimeout(
        () => this.kill(slot, "timeout"),
        req.limits.timeoutMs + this.graceMs,
      ),
      inflight: 0,
      abort: null,
      onAbort: () => this.kill(slot, "internal_error"),
    };
    slot.active = active;
    if (req.key && slot.recent[0] !== req.key) {
      slot.recent = [req.key, ...slot.recent.filter((k) => k !== req.key)].slice(0, 64);
    }
    if (req.signal?.aborted) {
      this.kill(slot, "internal_error");
      return;
    }
    req.signal?.addEventListener("abort", active.onAbort, { once: true });
    const msg: ToWorker = {
      t: "run",
      id,
      run: {
        sdkCallsInFlight: this.opts.sdkCallsInFlight,
        sdkCallsPerRun: this.opts.sdkCallsPerRun,
        key: req.key,
        name: req.name,
        source: req.source,
        modules: [...req.modules],
        ctx: req.ctx,
        limits: req.limits,
      },
    };
    try {
      slot.worker.postMessage(msg);
    } catch (err) {
      this.opts.logger.error({ err }, "could not hand a run to a sandbox worker");
      this.finish(slot, this.failure("internal_error", "The script could not be started.", 0));
      this.pump();
    }
  }

  /** End the active run of `slot` with `kind` and replace its worker (it may be stuck). */
  private kill(slot: Slot, kind: FailureKind): void {
    if (!slot.active) return;
    this.finish(slot, this.failure(kind, limitMessage(kind), this.elapsed(slot)));
    this.replace(slot);
    this.pump();
  }

  private finish(slot: Slot, outcome: RunOutcome): void {
    const a = slot.active;
    if (!a) return;
    slot.active = null;
    a.watchdog.cancel();
    // A ready-made reason: abort() without one builds a DOMException (and its stack) every run.
    a.abort?.abort(RUN_ENDED);
    a.req.signal?.removeEventListener("abort", a.onAbort);
    const n = (this.perApp.get(a.req.appId) ?? 1) - 1;
    if (n <= 0) this.perApp.delete(a.req.appId);
    else this.perApp.set(a.req.appId, n);
    a.resolve(outcome);
  }

  private onMessage(slot: Slot, m: FromWorker): void {
    if (slot.gone) return;
    switch (m.t) {
      case "ready":
        slot.ready = true;
        this.pump();
        return;
      case "log":
        this.opts.logger.error(m.obj, m.msg);
        return;
      case "done": {
        if (slot.active?.id !== m.id) return;
        this.finish(slot, m.outcome);
        if (m.poisoned || m.wasmBytes > this.recycleWasmBytes) this.replace(slot);
        this.pump();
        return;
      }
      case "call":
        this.call(slot, m);
        return;
    }
  }

  private call(slot: Slot, m: Extract<FromWorker, { t: "call" }>): void {
    const a = slot.active;
    if (a?.id !== m.id) return;
    const reply = (r: { ok: true; value: unknown } | { ok: false; error: WireError }) => {
      if (slot.active !== a || slot.gone) return;
      const msg = { t: "reply", id: m.id, call: m.call, ...r } as ToWorker;
      try {
        slot.worker.postMessage(msg);
      } catch (err) {
        this.opts.logger.error({ err, op: m.op }, "SDK result could not be sent to the sandbox");
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
          if (!signal.aborted) this.opts.logger.error({ err, op: m.op }, "SDK call failed");
          reply({ ok: false, error: { kind: "internal", op: m.op } });
        }
      },
    );
  }
}
