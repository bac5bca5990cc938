// Script-platform figures: requests/s and p99 of a hello-world script route vs a bare Fastify
// route returning the same JSON (same process, same load generator, one after the other), and
// the cost of the first call of a newly saved script. Runs the TypeScript sources in-process on
// SQLite (or PostgreSQL with TEST_BACKEND=postgres and DATABASE_URL). Under a minute.
import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { loadEnv } from "@app/kit/config";
import { createTestEnv } from "@app/kit/db/testing";
import { createHttpApp } from "@app/kit/http";
import { createLogger } from "@app/kit/logger";
import autocannon from "autocannon";
import { buildApp } from "../../services/script-platform/src/app.js";
import { envSpec } from "../../services/script-platform/src/config.js";

const DURATION_S = 10;
const CONNECTIONS = 32;
const line = (label: string, value: string) => process.stdout.write(`${label.padEnd(48)} ${value}\n`);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;

const env = await createTestEnv("bench_platform");
const config = loadEnv(envSpec, {
  DATA_DIR: env.dataDir,
  DATABASE_URL: env.databaseUrl,
  PLATFORM_ADMIN_USERNAME: "bench",
  PLATFORM_ADMIN_PASSWORD: "bench password 1234",
  PLATFORM_MAX_CONCURRENCY: "64",
});
const logger = createLogger({ name: "bench", level: "error" });
const built = await buildApp(config, { logger, announce: () => {} });
const { app } = built;
await app.listen({ port: 0, host: "127.0.0.1" });
const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

const bare = createHttpApp({ logger });
bare.get("/hello", async () => ({ hello: "world" }));
await bare.listen({ port: 0, host: "127.0.0.1" });
const bareBase = `http://127.0.0.1:${(bare.server.address() as AddressInfo).port}`;

const login = await app.inject({
  method: "POST",
  url: "/api/v1/admin/login",
  payload: { username: "bench", password: "bench password 1234" },
});
const token = login.json().token as string;
const admin = async (method: string, url: string, payload?: unknown) => {
  const res = await app.inject({
    method: method as "POST",
    url,
    headers: { authorization: `Bearer ${token}` },
    ...(payload ? { payload: payload as object } : {}),
  });
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return res.json();
};
const appId = (await admin("POST", "/api/v1/admin/apps", { slug: "bench" })).id as string;
await admin("POST", `/api/v1/admin/apps/${appId}/domains`, { host: "bench.test" });
const save = async (name: string, path: string) => {
  const s = await admin("POST", "/api/v1/admin/scripts", {
    app_id: appId,
    name,
    kind: "endpoint",
    source: `export default function (ctx) { return { hello: "world" }; }`,
  });
  await admin("POST", `/api/v1/admin/scripts/${s.id}/routes`, { path, method: "GET", host_kind: "any" });
};
await save("hello", "/hello");

const run = (url: string) =>
  autocannon({ url, connections: CONNECTIONS, duration: DURATION_S, headers: { host: "bench.test" } });

// Warm both (JIT, WASM, statement caches) before measuring.
await autocannon({ url: `${base}/hello`, connections: 8, amount: 500, headers: { host: "bench.test" } });
await autocannon({ url: `${bareBase}/hello`, connections: 8, amount: 500 });
const b = await run(`${bareBase}/hello`);
const s = await run(`${base}/hello`);
const errors = s.non2xx + s.errors;

process.stdout.write(`backend: ${env.backend}, ${CONNECTIONS} connections, ${DURATION_S} s each\n`);
line("bare Fastify route: requests/s (mean)", b.requests.average.toFixed(0));
line("bare Fastify route: p99 latency", `${b.latency.p99} ms`);
line("script route (sync, outbox): requests/s (mean)", s.requests.average.toFixed(0));
line("script route (sync, outbox): p99 latency", `${s.latency.p99} ms`);
line("script route non-2xx + errors", String(errors));
const ratio = s.requests.average / b.requests.average;
line("ratio script/bare (target >= 0.5)", `${ratio.toFixed(3)} ${ratio >= 0.5 ? "(met)" : "(NOT met)"}`);

// First call of a newly saved script (import-list parse, module cache miss) vs its next call.
// node:http rather than fetch: the Host header selects the app and fetch will not send one.
const get = (path: string) =>
  new Promise<number>((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const req = request(`${base}${path}`, { headers: { host: "bench.test" } }, (res) => {
      res.resume();
      res.on("end", () => {
        if (res.statusCode !== 200) reject(new Error(`${path}: ${res.statusCode}`));
        else resolve(ms(t0));
      });
    });
    req.on("error", reject);
    req.end();
  });
const firsts: number[] = [];
const warm: number[] = [];
for (let i = 0; i < 15; i++) {
  await save(`fresh${i}`, `/fresh${i}`);
  firsts.push(await get(`/fresh${i}`));
  warm.push(await get(`/fresh${i}`));
}
line("first call of a newly saved script (median)", `${median(firsts).toFixed(2)} ms`);
line("second call of the same script (median)", `${median(warm).toFixed(2)} ms`);

await bare.close();
await app.close();
await built.close();
await env.cleanup();
