import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../control/harness.js";

/**
 * The engine's guarantees through HTTP (issue 10): scripts run in a worker pool, so a hog or a
 * stuck native call of one app neither delays another app nor the main thread, ends on time, and
 * gives its memory back; one app cannot hold every worker. Runs on both backends.
 */
describe("engine isolation: worker pool, watchdog, per-app cap, crash paths, memory", () => {
  let h: Harness;
  const apps: Record<string, string> = {};
  const inject = (host: string, url: string) => h.built.app.inject({ method: "GET", url, headers: { host } });
  const deploy = async (app: string, name: string, source: string, extra: Record<string, unknown> = {}) => {
    const res = await h.call("POST", "/api/v1/admin/scripts", {
      app_id: apps[app],
      name,
      kind: "endpoint",
      source,
      ...extra,
    });
    if (res.statusCode !== 201) throw new Error(res.body);
    const id = res.json().id as string;
    const r = await h.call("POST", `/api/v1/admin/scripts/${id}/routes`, { path: `/${name}`, method: "GET" });
    if (r.statusCode !== 201) throw new Error(r.body);
    return id;
  };
  /**
   * One native call the interpreter's interrupt handler never reaches: a naive substring search of
   * 2.5e11 character compares (measured: still running after 6 s with an interrupt handler asking to
   * stop at 300 ms). Small strings, so no size limit ends it first, on any machine speed.
   */
  const STUCK = `export default function () { const h = "a".repeat(1000000); return h.indexOf("a".repeat(500000) + "b"); }`;
  const runtime = () => h.built.engine.runtime;

  beforeAll(async () => {
    h = await startHarness({ PLATFORM_WORKERS: "2", PLATFORM_APP_CONCURRENCY: "1" });
    for (const slug of ["hog", "calm", "leaky"]) {
      apps[slug] = (await h.call("POST", "/api/v1/admin/apps", { slug })).json().id;
      await h.call("POST", `/api/v1/admin/apps/${apps[slug]}/domains`, { host: `${slug}.test` });
    }
    // The five calm round trips below must fit inside the stuck run's limit on a loaded machine
    // (the README, Tests, says why 1 s was too short).
    await deploy("hog", "stuck", STUCK, { timeout_seconds: 2 });
    await deploy(
      "hog",
      "spin",
      // Executes until the watchdog ends it (one native call): a run waiting on a timer would
      // park and hold no share of its app's cap.
      STUCK,
      { timeout_seconds: 3 },
    );
    await deploy("hog", "quick", `export default () => "fine"`);
    await deploy("calm", "hello", `export default () => ({ hello: "world" })`);
    await runtime().engine.ready();
  }, 120_000);
  afterAll(async () => {
    await h?.close();
  });

  it("ends a stuck native call at its limit, replaces the worker, and another app keeps its latency", async () => {
    const replacedBefore = runtime().engine.stats.replaced;
    const started = performance.now();
    let hogAnswered = false;
    const hog = inject("hog.test", "/stuck").then((r) => {
      hogAnswered = true;
      return { r, ms: performance.now() - started };
    });
    while (runtime().engine.busy < 1) await new Promise((r) => setImmediate(r));
    // Calm rounds while the hog holds its worker (up to five; on a loaded machine the watchdog
    // may end the hog after fewer): each answered, the first one before the hog's answer.
    const answeredWhileHeld: boolean[] = [];
    for (let i = 0; i < 5 && !hogAnswered; i++) {
      const [calm, health] = await Promise.all([
        inject("calm.test", "/hello"),
        inject("calm.test", "/healthz"),
      ]);
      answeredWhileHeld.push(!hogAnswered);
      expect([calm.statusCode, calm.json()]).toEqual([200, { hello: "world" }]);
      expect(health.statusCode).toBe(200);
    }
    const { r, ms } = await hog;
    expect([r.statusCode, r.json().error.code]).toEqual([504, "timeout"]);
    // The hard limit: answered after the limit, by the watchdog, while the call is still stuck.
    // The overshoot itself (target 100 ms) is a bench/platform figure; this bound only has to
    // hold on a loaded CI machine.
    expect(ms).toBeGreaterThanOrEqual(2000);
    expect(ms).toBeLessThan(2000 + 4000);
    console.info(`stuck native call answered after ${Math.round(ms)} ms (limit 2000 ms)`);
    // A calm request finished while the hog still held its worker (no wall-clock bound).
    expect(answeredWhileHeld[0]).toBe(true);
    expect(runtime().engine.stats.replaced).toBeGreaterThan(replacedBefore);
    await runtime().engine.ready();
    expect((await inject("hog.test", "/quick")).body).toBe("fine");
  });

  it("caps one app's concurrent runs: beyond PLATFORM_APP_CONCURRENCY a sync request gets 503 busy", async () => {
    const first = inject("hog.test", "/spin");
    while (runtime().engine.busy < 1) await new Promise((r) => setImmediate(r));
    const t = performance.now();
    const second = await inject("hog.test", "/quick");
    // It waited briefly (SYNC_QUEUE_WAIT_MS) for the app's slot, then gave up.
    expect(performance.now() - t).toBeGreaterThanOrEqual(900);
    expect([second.statusCode, second.json().error.code, second.headers["retry-after"]]).toEqual([
      503,
      "busy",
      "1",
    ]);
    // The other worker stays free for other apps.
    const e = runtime().engine;
    const calm = await inject("calm.test", "/hello");
    expect([calm.statusCode, e.busy, e.size, e.waiting]).toEqual([200, 1, 2, 0]);
    expect((await first).statusCode).toBe(504);
    await runtime().engine.ready();
  });

  it("answers crash paths in the contract's shape and records the structured error", async () => {
    await deploy("calm", "boom", `export default function (ctx) {\n  const x = null;\n  return x.field;\n}`);
    await deploy("calm", "empty", `export default function () { throw new Error(); }`);
    await deploy("calm", "deep", `export default function f() { return f() + 1; }`);
    // Each job returns a new promise the previous one adopts: a chain that only grows.
    await deploy(
      "calm",
      "grow",
      `export default async function () { const f = () => Promise.resolve().then(f); f(); await new Promise(() => {}); }`,
      { timeout_seconds: 60 },
    );
    const boom = await inject("calm.test", "/boom");
    expect(boom.statusCode).toBe(502);
    expect(boom.json().error).toEqual({
      code: "script_error",
      message: "The script failed: TypeError: cannot read property 'field' of null",
    });
    expect(boom.body).not.toContain("boom:3");
    const empty = await inject("calm.test", "/empty");
    expect(empty.json().error.message).toBe("The script failed: Error (thrown without a message)");
    expect([(await inject("calm.test", "/deep")).statusCode]).toEqual([507]);
    // An endless, growing chain of promise jobs names a limit (it is not "never settled"): the
    // memory limit or the operation budget its jobs count against, whichever it reaches first.
    const grow = await inject("calm.test", "/grow");
    expect(grow.statusCode).toBe(507);
    expect(grow.json().error.code).toMatch(/^(size_limit|operation_limit)$/);
    await runtime().dispatcher.idle();
    const items = (await h.call("GET", `/api/v1/admin/apps/${apps.calm}/executions?status=error`)).json()
      .items as { script_id: string; error: Record<string, unknown>; instance_id: string }[];
    const rec = items.find((x) => x.error.message === "TypeError: cannot read property 'field' of null");
    expect(rec?.error).toMatchObject({ code: "script_error", line: 3, column: 11 });
    expect(String(rec?.error.stack)).toContain("boom:3:11");
    expect(rec?.instance_id).toEqual(expect.any(String));
  });

  it("lets a script catch sdk_busy when it has too many SDK calls in flight", async () => {
    // The crash paths above replaced workers: a run finding none ready would wait for a slot.
    await runtime().engine.ready();
    await deploy(
      "calm",
      "burst",
      `export default async function () {
        const c = kv.collection("b");
        const rs = await Promise.allSettled(Array.from({ length: 80 }, (_, i) => c.get("k" + i)));
        const busy = rs.filter((r) => r.status === "rejected" && r.reason.code === "sdk_busy").length;
        return { ok: rs.length - busy, busy };
      }`,
    );
    const r = await inject("calm.test", "/burst");
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ ok: 64, busy: 16 });
  });

  it("gives memory back: 100 runs of the three leaking scripts keep RSS within 150 MiB", async () => {
    await deploy(
      "leaky",
      "jobs",
      // A job that queues the next one forever, in constant memory: only the time limit ends it.
      `export default async function () { const f = () => { Promise.resolve().then(f); }; f(); await new Promise(() => {}); }`,
      { timeout_seconds: 1 },
    );
    await deploy(
      "leaky",
      "json",
      `export default function () { let o = {}; for (let i = 0; i < 1e6; i++) o = { a: o }; return JSON.stringify(o).length; }`,
      { timeout_seconds: 1 },
    );
    await deploy(
      "leaky",
      "evaldeep",
      `export default function () { return eval("(".repeat(100000) + "1" + ")".repeat(100000)); }`,
      { timeout_seconds: 1 },
    );
    const before = process.memoryUsage().rss;
    let peak = before;
    const statuses = new Map<string, number>();
    const paths = ["/jobs", "/json", "/evaldeep"];
    for (let i = 0; i < 100; i++) {
      const r = await inject("leaky.test", paths[i % 3] as string);
      const key = `${r.statusCode} ${r.json().error.code}`;
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
      expect(r.json().error.message).not.toMatch(/^Error: ?$/);
      peak = Math.max(peak, process.memoryUsage().rss);
    }
    await runtime().engine.ready();
    const after = process.memoryUsage().rss;
    console.info(
      `RSS before ${Math.round(before / 2 ** 20)} MiB, peak ${Math.round(peak / 2 ** 20)} MiB, after ${Math.round(after / 2 ** 20)} MiB`,
    );
    console.info(Object.fromEntries(statuses));
    expect([...statuses.keys()].every((s) => /^(502|504|507) /.test(s))).toBe(true);
    expect(after - before).toBeLessThan(150 * 2 ** 20);
  }, 240_000);

  it("K apps holding every worker (K = 3 on 2 workers) do not take another app down: spare workers start", async () => {
    // Each run holds its worker until its timeout (a timer it never sees fire); no CPU spent.
    const slugs = ["hog", "leaky", "third"];
    apps.third = (await h.call("POST", "/api/v1/admin/apps", { slug: "third" })).json().id;
    await h.call("POST", `/api/v1/admin/apps/${apps.third}/domains`, { host: "third.test" });
    for (const slug of slugs)
      await deploy(
        slug,
        "hold",
        // real-time: a script's own timer that never fires before its time limit ends the run
        `export default async () => { await new Promise((r) => setTimeout(r, 60000)); }`,
        {
          timeout_seconds: 4,
        },
      );
    const e = runtime().engine;
    const sparesBefore = e.stats.sparesStarted;
    let answered = 0;
    const holds = slugs.map((slug) =>
      inject(`${slug}.test`, "/hold").then((r) => {
        answered++;
        return r.statusCode;
      }),
    );
    while (e.busy < 2) await new Promise((r) => setImmediate(r));
    const calm = await inject("calm.test", "/hello");
    const health = await inject("calm.test", "/healthz");
    // Answered while every holder still held its worker.
    expect([calm.statusCode, health.statusCode, answered]).toEqual([200, 200, 0]);
    expect(e.stats.sparesStarted - sparesBefore).toBe(2);
    expect(e.size).toBe(4);
    expect(await Promise.all(holds)).toEqual([504, 504, 504]);
  }, 60_000);
});
