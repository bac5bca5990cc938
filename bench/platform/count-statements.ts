// Statements per triggered run, by kind: runs bench/platform-async's target in this process with
// the pg client's query() wrapped to count what reaches PostgreSQL (DATABASE_URL required).
// Run: npm run build && DATABASE_URL=… node --import tsx bench/platform/count-statements.ts
// PG_STAT=1: on a server with pg_stat_statements loaded (shared_preload_libraries, track_planning
// on), also prints the burst's planning and execution time per statement kind, read from it.
// PLAN_CACHE_MODE=auto|force_generic_plan: sets it on every connection (an experiment knob).
import { readdirSync, readFileSync } from "node:fs";
import pg from "pg";
import { withDatabase } from "../platform-async/measure.js";
import { startPlatformAsync } from "../platform-async/targets.js";

const counts = new Map<string, number>();
/** Milliseconds from sending to the answer, per kind (server time plus round trip and queueing). */
const waits = new Map<string, number>();
/** One statement of each kind with its parameters, replayed afterwards to cost it alone. */
const samples = new Map<string, { text: string; values: unknown }>();
const proto = pg.Client.prototype as unknown as { query: (...a: unknown[]) => unknown };
const original = proto.query;
let counting = false;
const planMode = process.env.PLAN_CACHE_MODE;
if (planMode) {
  if (!/^[a-z_]+$/.test(planMode)) throw new Error("PLAN_CACHE_MODE: a mode name");
  // pg.Pool connects with a callback, a lone client without: both get the SET before use.
  const connect = pg.Client.prototype.connect as unknown as (this: pg.Client) => Promise<void>;
  (pg.Client.prototype as unknown as { connect: (cb?: (e?: Error) => void) => unknown }).connect = function (
    this: pg.Client,
    cb?: (e?: Error) => void,
  ) {
    const done = connect
      .call(this)
      .then(() => original.call(this, `SET plan_cache_mode = ${planMode}`) as Promise<unknown>)
      .then(() => undefined);
    if (!cb) return done;
    done.then(
      () => cb(),
      (e: Error) => cb(e),
    );
    return undefined;
  };
}
proto.query = function (this: unknown, ...args: unknown[]) {
  const q = args[0] as string | { text?: string; name?: string };
  const text = typeof q === "string" ? q : (q?.text ?? "");
  if (!counting) return original.apply(this, args);
  const key = text
    .replace(/\s+/g, " ")
    .replace(/\(\$\d+(, \$\d+)*\)/g, "(…)")
    .slice(0, 90);
  counts.set(key, (counts.get(key) ?? 0) + 1);
  if (!samples.has(key))
    samples.set(key, { text, values: typeof q === "string" ? args[1] : (q as { values?: unknown }).values });
  const t0 = performance.now();
  const r = original.apply(this, args) as Promise<unknown>;
  const done = () => waits.set(key, (waits.get(key) ?? 0) + performance.now() - t0);
  if (r && typeof r.then === "function") r.then(done, done);
  return r;
};
/**
 * CPU ticks of the PostgreSQL server's processes by role: this bench's backends (their command
 * line names the database), other backends, and the server's own workers (autovacuum, WAL
 * writer, ...). Ended processes count in their parent's cutime only, so they are not split.
 */
function postgresTicks(database: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (!stat.includes("(postgres)")) continue;
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const role = cmd.includes(database)
        ? /autovacuum/.test(cmd)
          ? "this bench's autovacuum"
          : process.env.PER_PID
            ? `this bench's backend ${pid}`
            : "this bench's backends"
        : /postgres: postgres /.test(cmd)
          ? "other backends"
          : (cmd.replace(/^postgres: /, "").split(/\s+/)[0] ?? "?");
      out.set(role, (out.get(role) ?? 0) + Number(f[11]) + Number(f[12]));
      // Kernel time (syscalls, page faults) of the same processes, apart.
      out.set(`${role} (kernel)`, (out.get(`${role} (kernel)`) ?? 0) + Number(f[12]));
    } catch {
      // ended meanwhile
    }
  }
  return out;
}
const url = process.env.DATABASE_URL;
if (!url) throw new Error("DATABASE_URL is required");
const n = Number(process.env.BENCH_N ?? 600);
await withDatabase(url, async (db) => {
  const t = await startPlatformAsync({ databaseUrl: db });
  await t.commands?.burst?.(50);
  const name = new URL(db).pathname.slice(1);
  const before = postgresTicks(name);
  const stat = process.env.PG_STAT ? await pgStat(db) : null;
  await stat?.reset();
  const cpu0 = process.cpuUsage();
  counting = true;
  await t.commands?.burst?.(n);
  counting = false;
  const cpu = process.cpuUsage(cpu0);
  const after = postgresTicks(name);
  process.stdout.write(
    `this process: ${((cpu.user + cpu.system) / 1000 / n).toFixed(3)} ms CPU/run (kernel ${(cpu.system / 1000 / n).toFixed(3)})\n`,
  );
  for (const [role, ticks] of after)
    process.stdout.write(
      `postgres ${role}: ${(((ticks - (before.get(role) ?? 0)) * 10) / n).toFixed(3)} ms CPU/run\n`,
    );
  await stat?.print();
  await t.close();
  if (process.env.REPLAY) await replay(db);
});

/** pg_stat_statements of this bench's database: reset before the burst, printed after it. */
async function pgStat(db: string) {
  const client = new pg.Client({ connectionString: db });
  await client.connect();
  await original.call(client, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
  return {
    reset: () => original.call(client, "SELECT pg_stat_statements_reset()"),
    print: async () => {
      const r = (await original.call(
        client,
        `SELECT calls, plans, total_plan_time AS plan, total_exec_time AS exec, rows,
                left(regexp_replace(query, '\\s+', ' ', 'g'), 90) AS q
           FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
          ORDER BY total_plan_time + total_exec_time DESC LIMIT 15`,
      )) as { rows: { calls: number; plans: number; plan: number; exec: number; rows: number; q: string }[] };
      process.stdout.write("pg_stat_statements (ms per run: planning, execution; calls, plans):\n");
      for (const x of r.rows)
        process.stdout.write(
          `  ${(x.plan / n).toFixed(3)} ${(x.exec / n).toFixed(3)}  ${x.calls} ${x.plans}  ${x.q}\n`,
        );
      await client.end();
    },
  };
}

/**
 * Server CPU of each statement kind alone: REPLAY times each sample, inside a transaction that is
 * rolled back (so a delete or update finds its rows again only within it: a rough figure), read
 * from the backend's own /proc entry.
 */
async function replay(db: string) {
  const reps = Number(process.env.REPLAY);
  for (const [key, { text, values }] of samples) {
    if (/^(begin|commit|rollback)/i.test(text)) continue;
    const client = new pg.Client({ connectionString: db });
    client.on("error", (err) => process.stdout.write(`replay connection: ${err.message}\n`));
    await client.connect();
    try {
      await replayOne(client, key, text, values, reps);
    } catch (err) {
      process.stdout.write(`replay failed: ${(err as Error).message}  ${key}\n`);
    }
    await client.end().catch(() => {});
  }
}

async function replayOne(client: pg.Client, key: string, text: string, values: unknown, reps: number) {
  const pid = (await client.query("SELECT pg_backend_pid() AS pid")).rows[0].pid as number;
  const ticks = () => {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    return Number(f[11]) + Number(f[12]);
  };
  {
    await client.query("BEGIN");
    const t0 = ticks();
    const w0 = performance.now();
    // A marked statement runs as the named statement it is in the platform (plan_cache_mode auto).
    const named = text.startsWith("/*prepared*/ ") ? `replay${samples.size}` : undefined;
    if (named) await client.query("SET plan_cache_mode = auto");
    for (let i = 0; i < reps; i++)
      await client.query(
        named ? { name: named, text, values: values as unknown[] } : { text, values: values as unknown[] },
      );
    const cpu = ((ticks() - t0) * 10) / reps;
    const wall = (performance.now() - w0) / reps;
    await client.query("ROLLBACK");
    process.stdout.write(`replay ${cpu.toFixed(3)} ms server CPU, ${wall.toFixed(3)} ms wall  ${key}\n`);
    if (process.env.EXPLAIN) {
      const plan = await client.query(
        `EXPLAIN (ANALYZE, BUFFERS) ${text.replace(/^\/\*prepared\*\/ /, "")}`,
        values as unknown[],
      );
      for (const r of plan.rows) process.stdout.write(`    ${r["QUERY PLAN"]}\n`);
    }
  }
}
let total = 0;
for (const [k, v] of [...counts].sort((a, b) => b[1] - a[1])) {
  total += v;
  const ms = (waits.get(k) ?? 0) / v;
  process.stdout.write(
    `${(v / n).toFixed(3).padStart(7)}/run  ${v.toString().padStart(6)}  ${ms.toFixed(2).padStart(6)} ms  ${k}\n`,
  );
}
process.stdout.write(`${(total / n).toFixed(3).padStart(7)}/run  total statements for ${n} runs\n`);
process.exit(0);
