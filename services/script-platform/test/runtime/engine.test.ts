import { FakeClock, systemClock } from "@app/kit/clock";
import { captureLogger } from "@app/kit/logger";
import { describe, expect, it } from "vitest";
import {
  createEngine,
  type Engine,
  type HostCall,
  hideInternalFrames,
  type RunOutcome,
} from "../../src/sandbox/engine.js";
import { memoryBytes, resolveLimits, type SandboxKnobs } from "../../src/sandbox/limits.js";
import { quickJS } from "../../src/sandbox/quickjs.js";
import { WEB_APIS_PRELUDE } from "../../src/sandbox/web-apis.js";

const engine = createEngine({ clock: systemClock, logger: captureLogger().logger });
const noHost: HostCall = async (op) => {
  throw new Error(`unexpected ${op}`);
};

function run(
  source: string,
  opts: {
    sandbox?: Partial<SandboxKnobs>;
    timeout?: number;
    host?: HostCall;
    modules?: Record<string, string>;
    ctx?: unknown;
    eng?: Engine;
  } = {},
): Promise<RunOutcome> {
  return (opts.eng ?? engine).run({
    name: "main",
    source,
    modules: new Map(Object.entries(opts.modules ?? {})),
    ctx: opts.ctx ?? { request: { path: "/" } },
    limits: resolveLimits(opts.sandbox ?? {}, opts.timeout ?? 30),
    host: opts.host ?? noHost,
  });
}

describe("engine", () => {
  it("runs the default export with ctx and returns its value", async () => {
    const r = await run(
      `export default async function (ctx) { log.info("hi", {a: 1}); return { path: ctx.request.path, n: 1 + 1 }; }`,
    );
    expect(r).toMatchObject({ ok: true, value: { path: "/", n: 2 } });
    expect(r.logs).toEqual([{ level: "info", message: 'hi {"a":1}', at: expect.any(String) }]);
  });

  it("reports a thrown error as script_error with its message", async () => {
    const r = await run(`export default function () { throw new TypeError("nope"); }`);
    expect(r).toMatchObject({ ok: false, kind: "script_error", message: "TypeError: nope" });
  });

  it("ends an infinite loop at the operation budget", async () => {
    const r = await run(`export default function () { for (;;) {} }`, {
      sandbox: { max_operations: 100_000 },
    });
    expect(r).toMatchObject({ ok: false, kind: "operation_limit" });
  });

  it("stops async loops, for-await loops and endless promise-job chains at the operation budget, not the deadline", async () => {
    // Each job counts OPS_PER_JOB: with the default budget these end after ~40,000 jobs, well
    // before a 20 s deadline (counted by poll points alone they ran 15-30 s).
    for (const src of [
      `export default async function () { for (;;) await null; }`,
      `export default async function () { async function* g() { for (;;) yield 1; } for await (const x of g()) {} }`,
      `export default async function () { const f = () => { Promise.resolve().then(f); }; f(); await new Promise(() => {}); }`,
    ]) {
      const r = await run(src, { timeout: 20 });
      expect([src, r.ok ? "ok" : r.kind]).toEqual([src, "operation_limit"]);
    }
  });

  it("names size exhaustion size_limit: a string past its maximum length, a map past the memory limit", async () => {
    const small = { max_string_size: 1000, max_array_size: 1000, max_map_size: 1000 };
    for (const src of [
      `export default function () { let s = "a"; for (;;) s += s; }`,
      `export default function () { const m = new Map(); let i = 0; for (;;) m.set(i++, { i }); }`,
      `export default function () { const a = []; for (;;) a.push({ a }); }`,
    ]) {
      const r = await run(src, { sandbox: small, timeout: 60 });
      expect([src, r.ok ? "ok" : r.kind]).toEqual([src, "size_limit"]);
    }
  });

  it("counts buffer bytes: held ArrayBuffers and typed arrays stop at the run's memory limit, the module grown by about that", async () => {
    const mod = await quickJS();
    const limits = resolveLimits({}, 30);
    for (const src of [
      `export default () => { const a = []; for (let i = 0; i < 1000; i++) a.push(new ArrayBuffer(1 << 20)); return a.length; }`,
      `export default () => { const a = []; for (let i = 0; i < 1000; i++) a.push(new Int32Array(1 << 18)); return a.length; }`,
    ]) {
      const before = mod.getWasmMemory().buffer.byteLength;
      const r = await run(src);
      expect([src, r.ok ? "ok" : r.kind]).toEqual([src, "size_limit"]);
      // The allocator asks for a fifth more than it needs at a time: one step of slack.
      expect(mod.getWasmMemory().buffer.byteLength - before).toBeLessThanOrEqual(memoryBytes(limits) * 1.25);
    }
  });

  it("shows authors their own stack frames, not the engine's prelude or web APIs", async () => {
    const eng = createEngine({
      clock: systemClock,
      logger: captureLogger().logger,
      webApis: WEB_APIS_PRELUDE,
    });
    for (const src of [
      `export default async () => { return await fetch("not a url"); }`,
      `export default async () => { [1].map(() => { throw new Error("inner"); }); }`,
    ]) {
      const r = await run(src, { eng });
      expect(r.ok).toBe(false);
      const stack = r.ok ? "" : (r.detail?.stack ?? "");
      expect(stack).toMatch(/at default \(main:1:\d+\)/);
      expect(stack).not.toMatch(/sdk-prelude|web-apis/);
    }
    expect(
      hideInternalFrames(
        "    at URL (web-apis.js:1:2)\n    at default (main:3:4)\n    at run (sdk-prelude.js:5:6)\n",
      ),
    ).toBe("    at default (main:3:4)\n");
  });

  it("lets a loop within the operation budget finish", async () => {
    const r = await run(
      `export default function () { let s = 0; for (let i = 0; i < 1000; i++) s += i; return s; }`,
      {
        sandbox: { max_operations: 100_000 },
      },
    );
    expect(r).toMatchObject({ ok: true, value: 499500 });
  });

  it("interrupts an infinite loop inside a promise job", async () => {
    const r = await run(
      `export default async function () { await null; Promise.resolve().then(() => { for (;;) {} }); await new Promise(() => {}); }`,
      {
        sandbox: { max_operations: 200_000 },
      },
    );
    expect(r).toMatchObject({ ok: false, kind: "operation_limit" });
  });

  it("ends a run at its deadline from the clock in the interrupt handler", async () => {
    const clock = new FakeClock();
    const ticking = {
      ...clock,
      now: () => {
        clock.set(clock.now() + 50);
        return clock.now();
      },
      iso: () => clock.iso(),
      setTimeout: clock.setTimeout.bind(clock),
      setInterval: clock.setInterval.bind(clock),
      sleep: clock.sleep.bind(clock),
    };
    const eng = createEngine({ clock: ticking, logger: captureLogger().logger });
    const r = await run(`export default function () { for (;;) {} }`, { timeout: 1, eng });
    expect(r).toMatchObject({ ok: false, kind: "timeout" });
  });

  it("ends a run waiting on host I/O at its deadline", async () => {
    const clock = new FakeClock();
    const eng = createEngine({ clock, logger: captureLogger().logger });
    const p = run(`export default async function () { return await kv.collection("c").get("k"); }`, {
      timeout: 2,
      eng,
      host: () => new Promise(() => {}),
    });
    await clock.advance(2_000);
    expect(await p).toMatchObject({ ok: false, kind: "timeout" });
  });

  it("maps unbounded recursion to call_depth_limit and allows max_call_levels nested calls", async () => {
    const deep = await run(`export default function () { const f = (n) => f(n + 1) + 1; return f(0); }`, {
      sandbox: { max_call_levels: 32 },
    });
    expect(deep).toMatchObject({ ok: false, kind: "call_depth_limit" });
    const ok = await run(
      `export default function () { const f = (n) => n === 0 ? 0 : [n].map((x) => f(x - 1))[0] + 1; return f(32); }`,
      {
        sandbox: { max_call_levels: 32 },
      },
    );
    expect(ok).toMatchObject({ ok: true, value: 32 });
  });

  it("does not take a faked limit error for a real one", async () => {
    for (const src of [
      `export default function () { throw new Error("operation_limit"); }`,
      `export default function () { const e = new Error("stack overflow"); e.name = "InternalError"; throw e; }`,
      `export default function () { throw { name: "InternalError", message: "out of memory" }; }`,
      `export default function () { if (typeof InternalError !== "undefined") throw new InternalError("stack overflow"); throw new Error("interrupted"); }`,
    ]) {
      const r = await run(src);
      expect(r).toMatchObject({ ok: false, kind: "script_error" });
    }
  });

  it("enforces the size knobs on the result and on SDK values", async () => {
    const big = await run(`export default function () { return "x".repeat(2000); }`, {
      sandbox: { max_string_size: 1000 },
    });
    expect(big).toMatchObject({ ok: false, kind: "size_limit" });
    const arr = await run(`export default function () { return new Array(50).fill(1); }`, {
      sandbox: { max_array_size: 10 },
    });
    expect(arr).toMatchObject({ ok: false, kind: "size_limit" });
    const map = await run(
      `export default function () { const o = {}; for (let i = 0; i < 20; i++) o["k" + i] = i; return o; }`,
      {
        sandbox: { max_map_size: 10 },
      },
    );
    expect(map).toMatchObject({ ok: false, kind: "size_limit" });
    const sdk = await run(
      `export default async function () { try { await kv.collection("c").set("k", "y".repeat(5000)); } catch (e) {} return "caught"; }`,
      {
        sandbox: { max_string_size: 1000 },
        host: async () => null,
      },
    );
    expect(sdk).toMatchObject({ ok: false, kind: "size_limit" });
    const incoming = await run(
      `export default async function () { return (await kv.collection("c").get("k")).length; }`,
      {
        sandbox: { max_string_size: 1000 },
        host: async () => "z".repeat(5000),
      },
    );
    expect(incoming).toMatchObject({ ok: false, kind: "size_limit" });
  });

  it("ends a huge allocation at the memory limit derived from the size knobs", async () => {
    const knobs = { max_string_size: 1000, max_array_size: 1000, max_map_size: 1000 };
    for (const src of [
      `export default function () { return new Array(1e7).fill(0).length; }`,
      `export default function () { return new Uint8Array(1e9).length; }`,
      `export default function () { const o = {}; for (let i = 0; ; i++) o["key" + i] = { i }; }`,
    ]) {
      const r = await run(src, { sandbox: knobs });
      expect(r).toMatchObject({ ok: false, kind: "size_limit" });
    }
  });

  it("passes bytes both ways as Uint8Array", async () => {
    const r = await run(
      `export default async function () { const got = await files.collection("c").get("x"); return { len: got.data.length, first: got.data[0], echo: new Uint8Array([7, 8]) }; }`,
      { host: async () => ({ data: Buffer.from([9, 1, 2]) }) },
    );
    expect(r.ok).toBe(true);
    if (r.ok) {
      const v = r.value as { len: number; first: number; echo: Buffer };
      expect(v.len).toBe(3);
      expect(v.first).toBe(9);
      expect([...v.echo]).toEqual([7, 8]);
    }
  });

  it("ends a run when its abort signal fires (shutdown)", async () => {
    const ac = new AbortController();
    const p = engine.run({
      name: "main",
      source: `export default async () => kv.collection("c").get("k")`,
      modules: new Map(),
      ctx: {},
      limits: resolveLimits({}, 30),
      host: () => new Promise(() => {}),
      signal: ac.signal,
    });
    ac.abort();
    expect(await p).toMatchObject({ ok: false, kind: "internal_error" });
  });

  it("aborts a pending SDK call's signal when its run ends, normally or by a limit", async () => {
    const signals: AbortSignal[] = [];
    const host: HostCall = (_op, _args, signal) => {
      signals.push(signal);
      return new Promise(() => {});
    };
    // The handler returns without awaiting its call: the run ends while the call is pending.
    const r = await run(`export default () => { kv.collection("c").get("k"); return 1; }`, { host });
    expect(r).toMatchObject({ ok: true, value: 1 });
    expect(signals.map((s) => s.aborted)).toEqual([true]);
    // A run a limit stops while its call is pending.
    const late = await run(
      `export default async () => { const p = kv.collection("c").get("a"); for (;;) {} }`,
      { host, sandbox: { max_operations: 20_000 } },
    );
    expect(late).toMatchObject({ ok: false, kind: "operation_limit" });
    expect(signals.map((s) => s.aborted)).toEqual([true, true]);
  });

  it("imports module scripts by name", async () => {
    const r = await run(`import { greet } from "greetings"; export default () => greet("a");`, {
      modules: { greetings: `export function greet(n) { return "hi " + n; }` },
    });
    expect(r).toMatchObject({ ok: true, value: "hi a" });
  });

  it("leaves a runtime stopped inside its promise jobs allocated instead of freeing it (QuickJS would abort)", async () => {
    // Freeing this runtime tripped QuickJS's gc_obj_list assertion, which aborts the whole WASM
    // module: the worker was poisoned and replaced after every such run.
    const log = captureLogger();
    const eng = createEngine({ clock: systemClock, logger: log.logger });
    const grow = `export default async function () { const f = () => Promise.resolve().then(f); f(); await new Promise(() => {}); }`;
    for (const key of [null, "grow"]) {
      const r = await eng.run({
        key,
        name: "main",
        source: grow,
        modules: new Map(),
        ctx: {},
        limits: resolveLimits({}, 0.3),
        host: noHost,
      });
      // Whichever comes first: the deadline, or the operation budget its jobs count against.
      expect(r.ok ? "ok" : r.kind).toMatch(/^(timeout|operation_limit)$/);
    }
    expect([eng.poisoned, eng.abandoned]).toEqual([false, 2]);
    expect(log.text()).not.toContain("could not free");
    // The module stays usable, and ordinary failures still free their runtime.
    expect(await run(`export default () => { throw new Error("x"); }`, { eng })).toMatchObject({
      kind: "script_error",
    });
    expect(await run(`export default () => 41 + 1`, { eng })).toMatchObject({ ok: true, value: 42 });
    expect(eng.abandoned).toBe(2);
  });
});

describe("engine: blank contexts", () => {
  it("builds blanks up to the target; a new script's run takes one and keeps its own limits, modules and name", async () => {
    const eng = createEngine({
      clock: systemClock,
      logger: captureLogger().logger,
      webApis: WEB_APIS_PRELUDE,
    });
    let built = 0;
    while (await eng.prepare(3)) built++;
    expect(eng.blankContexts).toBe(3);
    expect(built).toBe(2);
    expect(await eng.prepare(3)).toBe(false);
    const greet = await eng.run({
      name: "greeter",
      key: "app:greeter:v1",
      source: `import { greet } from "greetings"; export default () => greet(new URL("https://a.test/x").pathname);`,
      modules: new Map([["greetings", `export function greet(n) { return "hi " + n; }`]]),
      ctx: {},
      limits: resolveLimits({}, 30),
      host: noHost,
    });
    expect(greet).toMatchObject({ ok: true, value: "hi /x" });
    expect(eng.blankContexts).toBe(2);
    // The run's own operation budget applies, not the defaults the blank was built under.
    const spin = await eng.run({
      name: "spinner",
      key: "app:spinner:v1",
      source: `export default () => { for (;;) {} }`,
      modules: new Map(),
      ctx: {},
      limits: resolveLimits({ max_operations: 10_000 }, 30),
      host: noHost,
    });
    expect(spin).toMatchObject({ ok: false, kind: "operation_limit" });
    const thrown = await eng.run({
      name: "thrower",
      key: null,
      source: `export default () => { throw new Error("boom"); }`,
      modules: new Map(),
      ctx: {},
      limits: resolveLimits({}, 30),
      host: noHost,
    });
    expect(thrown).toMatchObject({ ok: false, kind: "script_error", message: "Error: boom" });
    expect(thrown.ok ? "" : (thrown.detail?.stack ?? "")).toContain("thrower");
    expect(eng.blankContexts).toBe(0);
    eng.clearWarm();
  });
});
