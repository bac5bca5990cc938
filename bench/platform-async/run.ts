// Trigger executions per second end to end (publishDurable → triggered script ran) on SQLite and,
// when DATABASE_URL is set, on PostgreSQL, with p50/p99 latency and server CPU per job; then the
// same job count through pg-boss on the same PostgreSQL server (the baseline). Each target runs
// in its own process (bench/harness) and publishes from inside it, as a script would; CPU is read
// from the OS. BENCH_N overrides the job count.
import { type Bench, startBench } from "../harness/index.js";
import { type Measured, measure, SINGLE, withDatabase } from "./measure.js";
import { PUBLISHERS } from "./targets.js";

const N = Number(process.env.BENCH_N ?? 600);
const targets = new URL("./targets.ts", import.meta.url);

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

const bench = startBench(
  "platform-async",
  `${N} publishDurable → triggered script runs (${PUBLISHERS} concurrent publishers), then ${SINGLE} one at a time`,
);
const sqlite = await measure(await bench.server("platform (SQLite)", targets, "startPlatformAsync", {}), N);
record(bench, "platform on SQLite", sqlite);
const adminUrl = process.env.DATABASE_URL;
if (adminUrl) {
  await withDatabase(adminUrl, async (databaseUrl) => {
    const ours = await measure(
      await bench.server("platform (PostgreSQL)", targets, "startPlatformAsync", { databaseUrl }),
      N,
    );
    const boss = await measure(await bench.server("pg-boss", targets, "startPgBoss", { databaseUrl }), N);
    record(bench, "pg-boss (same PostgreSQL)", boss);
    record(bench, "platform on PostgreSQL", ours, { label: "pg-boss", m: boss });
  });
} else {
  bench.note("DATABASE_URL unset: PostgreSQL and pg-boss (the baseline) figures skipped");
}
await bench.finish();
