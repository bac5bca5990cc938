// The one benchmark harness (see bench/README.md). The orchestrator (the bench's run.ts) only
// starts processes and collects figures: every target server runs in its own child process, the
// load generator (autocannon) and any other client run in their own child processes, and server
// CPU is read from the OS (/proc/<pid>/stat; getrusage in the child where /proc is missing).
import { type ChildProcess, execFileSync, fork } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { LoadArgs, LoadResult } from "./load.js";
import type { Figure, LoadFigures, LoadOptions, MachineInfo } from "./types.js";

export type { Figure, LoadFigures, LoadOptions, ServerTarget, TaskIo } from "./types.js";

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, "../..");
const childEntry = join(here, "child.ts");
const loadModule = new URL("./load.ts", import.meta.url).href;

const clockTicks = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

type Msg = { type: string; [k: string]: unknown };

/** A server running in its own child process. */
export interface ServerProc {
  label: string;
  url: string;
  info: Record<string, unknown>;
  pid: number;
  /** Run one of the target's commands inside the server process. */
  call<T = unknown>(name: string, arg?: unknown): Promise<T>;
  /** CPU seconds (user + system) the server process has used so far, as the OS counts it. */
  cpuSeconds(): Promise<number>;
  stop(): Promise<void>;
}

/** A client running in its own child process. */
export interface TaskProc<T> {
  pid: number;
  result: Promise<{ value: T; cpuS: number }>;
  send(message: unknown): void;
  next(): Promise<unknown>;
}

function forkChild(mode: "server" | "task", moduleUrl: string, exportName: string): ChildProcess {
  return fork(childEntry, [mode, moduleUrl, exportName], {
    // The bench's own TypeScript through tsx; `@app/*` resolve to the built dist/ unless the
    // orchestrator itself was started with --conditions=source (then every child runs sources too).
    execArgv: [...process.execArgv.filter((a) => a.startsWith("--conditions")), "--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    env: { ...process.env, TEST_BACKEND: process.env.TEST_BACKEND ?? "sqlite" },
  });
}

/** The process's own CPU counter from /proc (Linux), in seconds; undefined elsewhere. */
function procCpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(rest[11]) + Number(rest[12])) / clockTicks;
  } catch {
    return undefined;
  }
}

const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : "-");

export class Bench {
  readonly name: string;
  readonly description: string;
  private readonly children = new Set<ChildProcess>();
  private readonly loads: LoadFigures[] = [];
  private readonly figures: Figure[] = [];
  private readonly notes: string[] = [];
  private readonly loadavgStart = loadavg();
  private readonly startedAt = new Date();

  constructor(name: string, description: string) {
    this.name = name;
    this.description = description;
    const killAll = () => {
      for (const c of this.children) c.kill("SIGKILL");
    };
    process.on("exit", killAll);
    process.stdout.write(`${name}: ${description}\n${this.machineLine(this.loadavgStart)}\n`);
  }

  private machineLine(avg: number[]): string {
    return `machine: ${availableParallelism()} cores, load average ${avg.map((x) => x.toFixed(2)).join(" ")} (1/5/15 min), node ${process.version}, backend ${process.env.TEST_BACKEND ?? "sqlite"}`;
  }

  private track(child: ChildProcess): void {
    this.children.add(child);
    child.on("exit", () => this.children.delete(child));
  }

  /** Start `exportName` of `module` (a function returning a ServerTarget) in its own process. */
  async server(
    label: string,
    module: URL | string,
    exportName: string,
    args: unknown = {},
  ): Promise<ServerProc> {
    const child = forkChild("server", String(module), exportName);
    this.track(child);
    const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
    let seq = 0;
    const ready = new Promise<Msg>((resolve, reject) => {
      child.on("message", (m: Msg) => {
        if (m.type === "ready") resolve(m);
        else if (m.type === "failed") reject(new Error(`${label} failed to start: ${String(m.error)}`));
        else if (m.type === "result") {
          const p = pending.get(m.id as number);
          pending.delete(m.id as number);
          if (m.error) p?.reject(new Error(`${label}: ${String(m.error)}`));
          else p?.resolve(m.value);
        }
      });
      child.on("exit", (code) => {
        reject(new Error(`${label} exited with ${code} before it was ready`));
        for (const p of pending.values()) p.reject(new Error(`${label} exited with ${code}`));
      });
    });
    child.send({ type: "start", args });
    const m = await ready;
    const rpc = <T>(msg: Msg) =>
      new Promise<T>((resolve, reject) => {
        const id = ++seq;
        pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
        child.send({ ...msg, id });
      });
    const pid = child.pid as number;
    return {
      label,
      url: m.url as string,
      info: m.info as Record<string, unknown>,
      pid,
      call: (name, arg) => rpc({ type: "call", name, arg }),
      cpuSeconds: async () => {
        // A target that runs its server in a process of its own (e.g. a native binary) names it.
        const cpuPid = (m.info as { cpuPid?: unknown } | undefined)?.cpuPid;
        const fromProc = procCpuSeconds(typeof cpuPid === "number" ? cpuPid : pid);
        if (fromProc !== undefined) return fromProc;
        const u = await rpc<{ user: number; system: number }>({ type: "cpu" });
        return (u.user + u.system) / 1e6;
      },
      stop: async () => {
        if (child.exitCode !== null) return;
        const exited = new Promise((r) => child.once("exit", r));
        child.send({ type: "stop" });
        const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
        await exited;
        clearTimeout(timer);
      },
    };
  }

  /** Run `exportName(args, io)` of `module` in its own process (a client). */
  task<T>(module: URL | string, exportName: string, args: unknown = {}): TaskProc<T> {
    const child = forkChild("task", String(module), exportName);
    this.track(child);
    const inbox: unknown[] = [];
    const waiters: ((m: unknown) => void)[] = [];
    const result = new Promise<{ value: T; cpuS: number }>((resolve, reject) => {
      child.on("message", (m: Msg) => {
        if (m.type === "done") {
          const cpu = m.cpu as { user: number; system: number };
          resolve({ value: m.value as T, cpuS: (cpu.user + cpu.system) / 1e6 });
        } else if (m.type === "failed") reject(new Error(`task ${exportName} failed: ${String(m.error)}`));
        else if (m.type === "io") {
          const w = waiters.shift();
          if (w) w(m.message);
          else inbox.push(m.message);
        }
      });
      child.on("exit", (code) => reject(new Error(`task ${exportName} exited with ${code}`)));
    });
    child.send({ type: "start", args });
    return {
      pid: child.pid as number,
      result,
      send: (message) => child.send({ type: "io", message }),
      next: () =>
        inbox.length > 0
          ? Promise.resolve(inbox.shift())
          : Promise.race([
              new Promise<unknown>((r) => waiters.push(r)),
              result.then(() => {
                throw new Error(`task ${exportName} ended while a message was awaited`);
              }),
            ]),
    };
  }

  /**
   * HTTP load on `target` from autocannon in its own process; records and returns the row.
   * `baseline` names an earlier row: the ratio of requests/s is printed with this one.
   */
  async load(
    label: string,
    target: ServerProc,
    opts: LoadOptions & { baseline?: string },
  ): Promise<LoadFigures> {
    const duration = opts.duration ?? 10;
    const args: LoadArgs = {
      url: `${target.url}${opts.path}`,
      connections: opts.connections ?? 32,
      duration,
      warmup: opts.warmup ?? 500,
      ...(opts.method ? { method: opts.method } : {}),
      ...(opts.headers ? { headers: opts.headers } : {}),
      ...(opts.headerSets ? { headerSets: opts.headerSets } : {}),
      ...(opts.body !== undefined ? { body: opts.body } : {}),
    };
    const t = this.task<LoadResult>(loadModule, "runLoad", args);
    await t.next(); // warmed up
    const cpu0 = await target.cpuSeconds();
    const wall0 = performance.now();
    t.send("go");
    const { value: r } = await t.result;
    const wallS = (performance.now() - wall0) / 1000;
    const cpuS = (await target.cpuSeconds()) - cpu0;
    const base = opts.baseline ? this.loads.find((l) => l.label === opts.baseline) : undefined;
    const row: LoadFigures = {
      label,
      requests: r.requests,
      reqPerSec: r.reqPerSec,
      p50Ms: r.p50Ms,
      p99Ms: r.p99Ms,
      non2xx: r.non2xx,
      errors: r.errors,
      cpuMsPerReq: r.requests > 0 ? (cpuS * 1000) / r.requests : Number.NaN,
      cpuCores: cpuS / wallS,
      loaderCores: r.loaderCpuS / wallS,
      ...(base ? { baseline: base.label, ratio: r.reqPerSec / base.reqPerSec } : {}),
    };
    this.loads.push(row);
    // A client that used a whole core was the bottleneck: the server figure is then only a floor.
    if (row.loaderCores > 0.9)
      this.note(
        `${label}: the load generator used ${row.loaderCores.toFixed(2)} cores, so it may have limited the rate (a floor, not the server's ceiling)`,
      );
    process.stdout.write(
      `  measured ${label}: ${fmt(row.reqPerSec)} req/s, p50 ${row.p50Ms} ms, p99 ${row.p99Ms} ms, ${fmt(row.cpuMsPerReq, 3)} ms CPU/req\n`,
    );
    return row;
  }

  /** Record a figure that is not an HTTP load row (a latency, a throughput of jobs...). */
  figure(f: Figure): Figure {
    const row = f.baseline && f.ratio === undefined ? { ...f, ratio: f.value / f.baseline.value } : f;
    this.figures.push(row);
    return row;
  }

  note(text: string): void {
    this.notes.push(text);
  }

  /** Print the table, the machine and load, write .bench-results/<name>.json, stop all children. */
  async finish(servers: ServerProc[] = []): Promise<void> {
    for (const s of servers) await s.stop();
    const machine: MachineInfo = {
      cores: availableParallelism(),
      cpuModel: cpus()[0]?.model ?? "unknown",
      node: process.version,
      loadavgStart: this.loadavgStart,
      loadavgEnd: loadavg(),
    };
    const out: string[] = [];
    if (this.loads.length > 0) {
      out.push(
        `${"HTTP load (autocannon in its own process)".padEnd(46)} ${"req/s".padStart(8)} ${"p50 ms".padStart(7)} ${"p99 ms".padStart(7)} ${"CPU ms/req".padStart(10)} ${"srv cores".padStart(9)} ${"non2xx+err".padStart(10)}  ratio`,
      );
      for (const l of this.loads)
        out.push(
          `${l.label.padEnd(46)} ${fmt(l.reqPerSec).padStart(8)} ${String(l.p50Ms).padStart(7)} ${String(l.p99Ms).padStart(7)} ${fmt(l.cpuMsPerReq, 3).padStart(10)} ${fmt(l.cpuCores, 2).padStart(9)} ${String(l.non2xx + l.errors).padStart(10)}  ${l.ratio !== undefined ? `${l.ratio.toFixed(3)} of ${l.baseline}` : ""}`,
        );
    }
    if (this.figures.length > 0) {
      out.push("figures");
      for (const f of this.figures)
        out.push(
          `  ${f.label.padEnd(58)} ${fmt(f.value, f.value < 10 ? 3 : 1).padStart(10)} ${f.unit}${f.baseline ? `  (baseline ${f.baseline.label}: ${fmt(f.baseline.value, f.baseline.value < 10 ? 3 : 1)} ${f.unit}, ratio ${fmt(f.ratio ?? Number.NaN, 3)})` : ""}${f.note ? `  ${f.note}` : ""}`,
        );
    }
    for (const n of this.notes) out.push(`note: ${n}`);
    out.push(`${this.machineLine(machine.loadavgEnd)} (at the end; other work on the machine skews figures)`);
    const file = join(repoRoot, ".bench-results", `${this.name}.json`);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(
      file,
      `${JSON.stringify(
        {
          name: this.name,
          description: this.description,
          startedAt: this.startedAt.toISOString(),
          finishedAt: new Date().toISOString(),
          backend: process.env.TEST_BACKEND ?? "sqlite",
          machine,
          loads: this.loads,
          figures: this.figures,
          notes: this.notes,
        },
        null,
        2,
      )}\n`,
    );
    out.push(`results: ${file}`);
    process.stdout.write(`${out.join("\n")}\n`);
    for (const c of this.children) c.kill("SIGKILL");
  }
}

/** Start a benchmark: prints the machine and load now, and the figures at `finish()`. */
export function startBench(name: string, description: string): Bench {
  return new Bench(name, description);
}

/** Percentile of an ascending array. */
export const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;

export const median = (xs: number[]): number =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );

/** Wall-clock milliseconds comparable across processes on one machine. */
export const wallMs = (): number => performance.timeOrigin + performance.now();
