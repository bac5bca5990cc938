import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../control/harness.js";

/**
 * Limits report what they are, through the real HTTP path with the default knobs (issue 29 item
 * 4): size exhaustion of every kind answers 507 size_limit, job loops 507 operation_limit, each
 * promptly (a far-off deadline: a run that waited for it would fail the time bound).
 */
describe("limits name themselves, promptly", () => {
  let h: Harness;
  let appId: string;
  /** Saves `source` (30 s deadline), runs it once; answers the response and its wall time. */
  const exec = async (source: string) => {
    const res = await h.call("POST", "/api/v1/admin/scripts", {
      app_id: appId,
      name: `s${Math.random().toString(36).slice(2, 10)}`,
      kind: "endpoint",
      source,
      timeout_seconds: 30,
    });
    if (res.statusCode !== 201) throw new Error(res.body);
    const t0 = performance.now();
    const out = await h.call("POST", `/api/v1/execute/${res.json().id}`, undefined, null);
    const ms = performance.now() - t0;
    return { status: out.statusCode, code: out.json().error?.code as string | undefined, ms };
  };

  beforeAll(async () => {
    h = await startHarness({ PLATFORM_WORKERS: "1" });
    appId = (await h.call("POST", "/api/v1/admin/apps", { slug: "limits" })).json().id;
  });
  afterAll(async () => h?.close());

  it("answers 507 size_limit for maps, sets, objects, arrays, strings and buffers, well before the deadline", async () => {
    for (const src of [
      `export default () => { const m = new Map(); let i = 0; for (;;) m.set(i++, { i }); }`,
      `export default () => { const s = new Set(); let i = 0; for (;;) s.add("k" + i++); }`,
      `export default () => { const o = {}; let i = 0; for (;;) o["k" + i++] = i; }`,
      `export default () => { const a = []; for (;;) a.push({ i: a.length }); }`,
      `export default () => { let s = "a"; for (;;) s += s; }`,
      `export default () => "x".repeat(2 ** 29).length`,
      // Buffer bytes count: many 1 MiB buffers, each far below any single-allocation bound.
      `export default () => { const a = []; for (;;) a.push(new ArrayBuffer(1 << 20)); }`,
      `export default () => { const a = []; for (;;) a.push(new Float64Array(1 << 17)); }`,
      `export default () => { const b = new Uint8Array(1 << 20); const a = []; for (;;) a.push(b.slice()); }`,
      `export default () => { const a = []; for (let i = 0; i < 1000; i++) a.push(new ArrayBuffer(1 << 20)); return a.length; }`,
      `export default () => new ArrayBuffer(2 ** 30).byteLength`,
    ]) {
      const r = await exec(src);
      expect([src, r.status, r.code]).toEqual([src, 507, "size_limit"]);
      expect(r.ms, src).toBeLessThan(10_000);
    }
    // The worker is still serving (a stopped run's memory is the worker's to recycle).
    const ok = await exec(`export default () => ({ fine: true })`);
    expect([ok.status, ok.code]).toEqual([200, undefined]);
  }, 180_000);

  it("answers 507 operation_limit for job loops, async and for-await loops as promptly as for a sync loop", async () => {
    const sync = await exec(`export default () => { for (;;) {} }`);
    expect([sync.status, sync.code]).toEqual([507, "operation_limit"]);
    for (const src of [
      `export default async () => { for (;;) await null; }`,
      `export default async () => { async function* g() { for (;;) yield 1; } for await (const x of g()) {} }`,
      `export default async () => { const f = () => { Promise.resolve().then(f); }; f(); await new Promise(() => {}); }`,
    ]) {
      const r = await exec(src);
      expect([src, r.status, r.code]).toEqual([src, 507, "operation_limit"]);
      // Within a second of the budget, as the sync loop: its own time plus a second (twice it on
      // a machine loaded enough to stretch both).
      expect(r.ms, src).toBeLessThan(Math.max(sync.ms + 1000, 2 * sync.ms));
    }
  }, 120_000);
});
