import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { FakeClock } from "@app/kit/clock";
import { type Database, openDatabase, sql } from "@app/kit/db";
import { createTestEnv, type TestEnv, testBackend } from "@app/kit/db/testing";
import { newId } from "@app/kit/ids";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PlatformDB } from "../../src/db/schema.js";
import { openSseClient, type SseClient } from "./sse-client.js";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are arbitrary JSON the assertions walk into
type Json = any;

const MAIN = fileURLToPath(new URL("../../src/main.ts", import.meta.url));
const ADMIN = { username: "scale", password: "scale-out password" };
const HOST = "scale.test";
const ROWS = 200;

interface Instance {
  proc: ChildProcess;
  port: number;
  output: string;
}

/** One platform process (`node --conditions=source --import tsx src/main.ts`) on the shared database. */
function startInstance(
  env: TestEnv,
  key: string,
  name: string,
  extra: Record<string, string> = {},
): Promise<Instance> {
  const dataDir = mkdtempSync(join(tmpdir(), `sp-scale-${name}-`));
  const proc = spawn(process.execPath, ["--conditions=source", "--import", "tsx", MAIN], {
    env: {
      ...process.env,
      DATABASE_URL: env.databaseUrl,
      DATA_DIR: dataDir,
      HOST: "127.0.0.1",
      PORT: "0",
      PLATFORM_SECRET_KEY: key,
      PLATFORM_ADMIN_USERNAME: ADMIN.username,
      PLATFORM_ADMIN_PASSWORD: ADMIN.password,
      LOG_LEVEL: "info",
      ...extra,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  proc.on("exit", () => rmSync(dataDir, { recursive: true, force: true }));
  return new Promise((resolve, reject) => {
    const inst: Instance = { proc, port: 0, output: "" };
    // real-time: a deadline for the child process to start, failing with its output (a cold tsx
    // start of the whole service on a 2-core machine under full load can take a minute).
    const timer = setTimeout(() => reject(new Error(`${name} did not start: ${inst.output}`)), 100_000);
    const onData = (chunk: Buffer) => {
      inst.output += chunk.toString();
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(inst.output);
      if (m && inst.port === 0) {
        inst.port = Number(m[1]);
        clearTimeout(timer);
        resolve(inst);
      }
    };
    proc.stdout?.on("data", onData);
    proc.stderr?.on("data", onData);
    proc.on("exit", (code) => reject(new Error(`${name} exited with ${code}: ${inst.output}`)));
  });
}

async function until<T>(
  what: string,
  probe: () => Promise<T | null | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    // real-time: polls other processes (their HTTP answers and rows); no event of theirs reaches this one.
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Runs `fn` while `insts` stand still (SIGSTOP), and continues them (SIGCONT) however it ends. */
async function whileStopped<T>(insts: readonly Instance[], fn: () => Promise<T>): Promise<T> {
  for (const inst of insts) inst.proc.kill("SIGSTOP");
  try {
    return await fn();
  } finally {
    for (const inst of insts) inst.proc.kill("SIGCONT");
  }
}

describe.skipIf(testBackend() !== "postgres")(
  "scale-out: two platform processes on one PostgreSQL database",
  () => {
    let env: TestEnv;
    let a: Instance;
    let b: Instance;
    let token = "";
    let appId = "";
    const scripts: Record<string, string> = {};
    const database = () => openDatabase<PlatformDB>({ url: env.databaseUrl });
    /** `n` pubsub rows for a script, due now, committed with the wake-up every enqueue sends. */
    const enqueuePubsub = async (
      db: Database<PlatformDB>,
      scriptId: string,
      topic: string,
      n: number,
      from = 0,
    ) => {
      const now = new Date().toISOString();
      await db.writeTx(async (trx) => {
        await trx
          .insertInto("outbox")
          .values(
            Array.from({ length: n }, (_, i) => ({
              id: newId(),
              app_id: appId,
              source_kind: "pubsub",
              trigger_id: null,
              script_id: scriptId,
              payload: JSON.stringify({ event: { pubsub: { topic, message: { i: from + i } } } }),
              due_at: now,
              principal: null,
              reply_to: null,
              created_at: now,
            })),
          )
          .execute();
        await sql`SELECT pg_notify('platform_outbox', '')`.execute(trx);
      });
    };
    const sse: SseClient[] = [];

    /** node:http rather than fetch: the Host header selects the app and fetch will not send one. */
    const call = (inst: Instance, method: string, path: string, body?: unknown, host = "127.0.0.1") =>
      new Promise<{ status: number; text: string; json(): Json }>((resolve, reject) => {
        const payload = body === undefined ? undefined : JSON.stringify(body);
        const req = request(
          {
            host: "127.0.0.1",
            port: inst.port,
            method,
            path,
            headers: {
              host,
              ...(token ? { authorization: `Bearer ${token}` } : {}),
              ...(payload !== undefined ? { "content-type": "application/json" } : {}),
            },
          },
          (res) => {
            let text = "";
            res.setEncoding("utf8");
            res.on("data", (c: string) => {
              text += c;
            });
            res.on("end", () => resolve({ status: res.statusCode ?? 0, text, json: () => JSON.parse(text) }));
          },
        );
        req.on("error", reject);
        req.end(payload);
      });

    beforeAll(async () => {
      env = await createTestEnv("sp_scale");
      const key = randomBytes(32).toString("hex");
      // A first (it migrates and bootstraps the admin), then B on the same database.
      a = await startInstance(env, key, "a");
      b = await startInstance(env, key, "b");
      const login = await call(a, "POST", "/api/v1/admin/login", ADMIN);
      expect(login.status).toBe(200);
      token = login.json().token;
      const app = await call(a, "POST", "/api/v1/admin/apps", { slug: "scale" });
      expect(app.status, app.text).toBe(201);
      appId = app.json().id;
      expect((await call(a, "POST", `/api/v1/admin/apps/${appId}/domains`, { host: HOST })).status).toBe(201);
      const sources: Record<string, string> = {
        count: `export default async function (ctx) {
        // real-time: a short run inside the script, so that one process cannot run every row
        // in the moment the test takes to see its first
        await new Promise((r) => setTimeout(r, 50));
        log.info(String(ctx.event.pubsub.message.i));
        return null;
      }`,
        announce: `export default async function (ctx) {
        await pubsub.publishDurable("live", { from: "a", n: 1 });
        return "sent";
      }`,
        token: `export default async function (ctx) { return pubsub.subscriberToken("live"); }`,
        // A run that takes a while: a process killed meanwhile holds claimed rows.
        slow: `export default async function (ctx) {
        // real-time: a run that lasts a while inside the script, so a process killed meanwhile
        // holds claimed rows
        await new Promise((r) => setTimeout(r, 200));
        log.info(String(ctx.event.pubsub.message.i));
        return null;
      }`,
      };
      for (const [name, source] of Object.entries(sources)) {
        const res = await call(a, "POST", "/api/v1/admin/scripts", {
          app_id: appId,
          name,
          kind: "endpoint",
          source,
        });
        expect(res.status, res.text).toBe(201);
        scripts[name] = res.json().id;
      }
      const trig = await call(a, "POST", `/api/v1/admin/apps/${appId}/triggers/pubsub`, {
        script_id: scripts.count,
        topic: "work",
      });
      expect(trig.status, trig.text).toBe(201);
      expect(
        (await call(a, "POST", `/api/v1/admin/apps/${appId}/topics`, { name: "live", external: true }))
          .status,
      ).toBe(201);
      for (const name of ["announce", "token"]) {
        const r = await call(a, "POST", `/api/v1/admin/scripts/${scripts[name]}/routes`, {
          path: `/${name}`,
          method: name === "token" ? "GET" : "POST",
        });
        expect(r.status, r.text).toBe(201);
      }
    }, 240_000);

    afterAll(async () => {
      for (const c of sse) c.close();
      for (const inst of [a, b]) {
        if (!inst || inst.proc.exitCode !== null) continue;
        const exited = new Promise((r) => inst.proc.once("exit", r));
        inst.proc.kill("SIGTERM");
        await exited;
      }
      await env?.cleanup();
    }, 60_000);

    it("a route created through instance A is served by instance B", async () => {
      const res = await until("B to serve /token", async () => {
        const r = await call(b, "GET", "/token", undefined, HOST);
        return r.status === 200 ? r : null;
      });
      expect(res.text.length).toBeGreaterThan(20);
    }, 60_000);

    it(`${ROWS} outbox rows are each run exactly once by the two instances' dispatchers`, async () => {
      const db = database();
      const left = async () =>
        Number(
          (
            await db.db
              .selectFrom("outbox")
              .select((eb) => eb.fn.countAll<number>().as("n"))
              .where("script_id", "=", scripts.count ?? "")
              .executeTakeFirst()
          )?.n,
        );
      const share = Math.floor(ROWS / 3);
      try {
        // A runs a first share alone while B stands still (SIGSTOP), then B a second share while
        // A stands still, then both compete for the rest: each takes part however the machine
        // schedules them. Together from the start, one could take every row before the other's
        // first claim.
        for (const [alone, rows, from] of [
          [b, share, 0],
          [a, share, share],
        ] as const)
          await whileStopped([alone], async () => {
            await enqueuePubsub(db, scripts.count ?? "", "work", rows, from);
            await until("the share to run", async () => (await left()) === 0);
          });
        await enqueuePubsub(db, scripts.count ?? "", "work", ROWS - 2 * share, 2 * share);
        const runs = await until(
          "every row to run",
          async () => {
            if ((await left()) !== 0) return null;
            return db.db
              .selectFrom("executions")
              .select(["status", "logs", "error", "instance_id"])
              .where("script_id", "=", scripts.count ?? "")
              .execute();
          },
          100_000,
        );
        expect(runs.filter((e) => e.status !== "succeeded").slice(0, 1)).toEqual([]);
        expect(runs).toHaveLength(ROWS);
        // Each row's own message: every i from 0 to ROWS-1 exactly once.
        const seen = runs
          .map((r) => Number((JSON.parse(r.logs) as { message: string }[])[0]?.message))
          .sort((x, y) => x - y);
        expect(seen).toEqual(Array.from({ length: ROWS }, (_, i) => i));
        expect(await db.db.selectFrom("dead_letters").selectAll().execute()).toEqual([]);
        // Both processes claimed rows: each execution records the instance that ran it.
        const instances = new Set(runs.map((r) => r.instance_id));
        expect([...instances].every((i) => typeof i === "string" && i.length > 0)).toBe(true);
        expect(instances.size).toBe(2);
      } finally {
        await db.close();
      }
    }, 120_000);

    it("a realtime message published via A reaches a subscriber on B", async () => {
      const t = await call(a, "GET", "/token", undefined, HOST);
      expect(t.status).toBe(200);
      const subscriberToken = t.text.replace(/^"|"$/g, "");
      const client = await openSseClient(
        b.port,
        `/api/v1/realtime/topics/live?token=${encodeURIComponent(subscriberToken)}`,
        {
          host: HOST,
        },
      );
      sse.push(client);
      expect(client.status).toBe(200);
      const sent = await call(a, "POST", "/announce", {}, HOST);
      expect(sent.status, sent.text).toBe(200);
      await client.waitFor('"from":"a"', new FakeClock());
      expect(client.text()).toMatch(/event: message\ndata: \{"from":"a","n":1\}/);
    }, 60_000);

    it("rows held by a process killed with SIGKILL are taken over once its heartbeat stops, each run exactly once", async () => {
      // C renews its claims every second with a 3 s lease (A and B keep the defaults); killed
      // while holding rows, its rows are claimable 3 s after its last renewal, not after the
      // 330 s lease a claim had before the heartbeat.
      const key = randomBytes(32).toString("hex");
      const c = await startInstance(env, key, "c", {
        PLATFORM_CLAIM_HEARTBEAT_S: "1",
        PLATFORM_CLAIM_TAKEOVER_S: "3",
      });
      const db = database();
      const N = 60;
      try {
        const others = new Set(
          (await db.db.selectFrom("executions").select("instance_id").distinct().execute()).map(
            (r) => r.instance_id,
          ),
        );
        // A and B stand still while the rows come and C claims them: running, they could take
        // every row before C's first claim, and C would hold none.
        const cId = await whileStopped([a, b], async () => {
          await enqueuePubsub(db, scripts.slow ?? "", "slow", N);
          // C holds claimed rows (its instance id is the one A and B never recorded).
          const held = await until("C to hold rows", async () => {
            const rows = await db.db
              .selectFrom("outbox")
              .select(["claimed_by", "lease_until"])
              .where("claimed_by", "is not", null)
              .execute();
            const mine = rows.filter((r) => !others.has(r.claimed_by));
            return mine.length > 0 ? mine : null;
          });
          const killed = new Promise((r) => c.proc.once("exit", r));
          c.proc.kill("SIGKILL");
          await killed;
          return held[0]?.claimed_by as string;
        });
        const orphans = await db.db.selectFrom("outbox").select("id").where("claimed_by", "=", cId).execute();
        // Within well under the old 330 s lease: every row ran, and each exactly once.
        const runs = await until(
          "every row to run after the kill",
          async () => {
            const left = await db.db
              .selectFrom("outbox")
              .select((eb) => eb.fn.countAll<number>().as("n"))
              .where("script_id", "=", scripts.slow ?? "")
              .executeTakeFirst();
            if (Number(left?.n) !== 0) return null;
            return db.db
              .selectFrom("executions")
              .select(["status", "logs", "instance_id"])
              .where("script_id", "=", scripts.slow ?? "")
              .where("status", "=", "succeeded")
              .execute();
          },
          60_000,
        );
        const seen = runs
          .map((r) => Number((JSON.parse(r.logs) as { message: string }[])[0]?.message))
          .sort((x, y) => x - y);
        expect(seen).toEqual(Array.from({ length: N }, (_, i) => i));
        console.info(`C held ${orphans.length} rows at the kill; A and B ran them`);
        expect(orphans.length).toBeGreaterThan(0);
      } finally {
        await db.close();
        if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill("SIGKILL");
      }
    }, 120_000);
  },
);
