// Trigger executions per second end to end (publishDurable → triggered script ran) on SQLite and,
// when DATABASE_URL is set, on PostgreSQL, with p50/p99 latency and server CPU per job; then the
// same job count through pg-boss on the same PostgreSQL server (the baseline). Each target runs
// in its own process (bench/harness) and publishes from inside it, as a script would; CPU is read
// from the OS. BENCH_N overrides the job count.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { type Bench, type ServerProc, startBench } from "../harness/index.js";
import { type Figures, PUBLISHERS } from "./targets.js";

const N = Number(process.env.BENCH_N ?? 600);
/** Jobs sent one at a time after the burst (unloaded latency). */
const SINGLE = 30;
const targets = new URL("./targets.ts", import.meta.url);

interface Measured {
  burst: Figures;
  single: Figures;
  cpuMsPerJob: number;
}

async function measure(target: ServerProc): Promise<Measured> {
  const cpu0 = await target.cpuSeconds();
  await target.call("burst", N);
  const cpuMsPerJob = (((await target.cpuSeconds()) - cpu0) * 1000) / N;
  await target.call("single", SINGLE);
  const f = await target.call<{ burst: Figures; single: Figures }>("figures");
  await target.stop();
  return { ...f, cpuMsPerJob };
}

function record(bench: Bench, label: string, m: Measured, base?: { label: string; m: Measured }) {
  const b = (v: (x: Measured) => number) =>
    base ? { baseline: { label: base.label, value: v(base.m) } } : {};
  bench.figure({
    label: `${label}: burst runs/s`,
    value: m.burst.perSecond,
    unit: "runs/s",
    ...b((x) => x.burst.perSecond),
    note: `${m.burst.jobs} jobs in ${m.burst.seconds.toFixed(2)} s${m.burst.runMs !== undefined ? `, mean ${m.burst.runMs.toFixed(1)} ms in the sandbox per run` : ""}`,
  });
  bench.figure({
    label: `${label}: burst p50 latency`,
    value: m.burst.p50,
    unit: "ms",
    ...b((x) => x.burst.p50),
  });
  bench.figure({
    label: `${label}: burst p99 latency`,
    value: m.burst.p99,
    unit: "ms",
    ...b((x) => x.burst.p99),
  });
  bench.figure({
    label: `${label}: server CPU per job (burst)`,
    value: m.cpuMsPerJob,
    unit: "ms",
    ...b((x) => x.cpuMsPerJob),
  });
  bench.figure({
    label: `${label}: one at a time p50 latency`,
    value: m.single.p50,
    unit: "ms",
    ...b((x) => x.single.p50),
  });
}

async function withDatabase<T>(adminUrl: string, fn: (url: string) => Promise<T>): Promise<T> {
  const name = `bench_async_${randomBytes(5).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  try {
    return await fn(u.toString());
  } finally {
    const again = new pg.Client({ connectionString: adminUrl });
    await again.connect();
    await again.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await again.end();
  }
}

const bench = startBench(
  "platform-async",
  `${N} publishDurable → triggered script runs (${PUBLISHERS} concurrent publishers), then ${SINGLE} one at a time`,
);
const sqlite = await measure(await bench.server("platform (SQLite)", targets, "startPlatformAsync", {}));
record(bench, "platform on SQLite", sqlite);
const adminUrl = process.env.DATABASE_URL;
if (adminUrl) {
  await withDatabase(adminUrl, async (databaseUrl) => {
    const ours = await measure(
      await bench.server("platform (PostgreSQL)", targets, "startPlatformAsync", { databaseUrl }),
    );
    const boss = await measure(await bench.server("pg-boss", targets, "startPgBoss", { databaseUrl }));
    record(bench, "pg-boss (same PostgreSQL)", boss);
    record(bench, "platform on PostgreSQL", ours, { label: "pg-boss", m: boss });
  });
} else {
  bench.note("DATABASE_URL unset: PostgreSQL and pg-boss (the baseline) figures skipped");
}
await bench.finish();
