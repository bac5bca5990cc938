import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../control/harness.js";

/**
 * Parked runs through HTTP: an app whose handler awaits a slow upstream serves many callers at
 * once on two workers with its cap at one run executing, instead of one per worker.
 */
describe("sync requests of one app parked on fetch", () => {
  let h: Harness;
  let server: Server;
  let base = "";
  const N = 200;
  /** Upstream requests open at once, and the most seen. */
  let open = 0;
  let maxOpen = 0;

  beforeAll(async () => {
    // A slow upstream: each answer half a second after its request.
    server = createServer((req, res) => {
      open++;
      maxOpen = Math.max(maxOpen, open);
      // real-time: the upstream's latency is what the runs park on (the issue's 500 ms fetch)
      setTimeout(() => {
        open--;
        res.end(`upstream ${req.url}`);
      }, 500);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    h = await startHarness({
      PLATFORM_WORKERS: "2",
      PLATFORM_APP_CONCURRENCY: "1",
      PLATFORM_HTTP_ALLOW_PRIVATE: "true",
    });
    const appId = (await h.call("POST", "/api/v1/admin/apps", { slug: "parked" })).json().id;
    await h.call("POST", `/api/v1/admin/apps/${appId}/domains`, { host: "parked.test" });
    const res = await h.call("POST", "/api/v1/admin/scripts", {
      app_id: appId,
      name: "proxy",
      kind: "endpoint",
      timeout_seconds: 300,
      source: `export default async (ctx) => {
        const r = await fetch(ctx.request.query.u);
        return { statusCode: 200, body: { n: ctx.request.query.n, got: await r.text() } };
      }`,
    });
    if (res.statusCode !== 201) throw new Error(res.body);
    const r = await h.call("POST", `/api/v1/admin/scripts/${res.json().id}/routes`, {
      path: "/p",
      method: "GET",
    });
    if (r.statusCode !== 201) throw new Error(r.body);
  });
  afterAll(async () => {
    await h?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
  });

  it(`${N} concurrent callers of a handler awaiting a slow fetch all answer 200, their runs interleaved`, async () => {
    const responses = Array.from({ length: N }, (_, n) =>
      h.built.app.inject({
        method: "GET",
        url: `/p?n=${n}&u=${encodeURIComponent(`${base}/r${n}`)}`,
        headers: { host: "parked.test" },
      }),
    );
    const answered = await Promise.all(responses);
    expect(
      answered
        .flatMap((r, n) => (r.statusCode === 200 ? [] : [`${n}:${r.statusCode}:${r.body.slice(0, 120)}`]))
        .slice(0, 4),
    ).toEqual([]);
    answered.forEach((r, n) => {
      expect(r.json()).toEqual({ n: String(n), got: `upstream /r${n}` });
    });
    // Runs waited on the upstream together: one run per worker would keep two requests open at most.
    expect(maxOpen).toBeGreaterThan(2);
  }, 300_000);
});
