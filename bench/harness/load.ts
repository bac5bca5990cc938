// The load generator: autocannon in its own process (a task child of the harness), so neither
// the server's nor the orchestrator's event loop does the client's work.
import { setMaxListeners } from "node:events";
import autocannon, { type Request } from "autocannon";
import type { LoadFigures, TaskIo } from "./types.js";

export interface LoadArgs {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  headerSets?: Record<string, string>[];
  body?: string;
  connections: number;
  duration: number;
  warmup: number;
}

/** What autocannon measured, plus the loader's own CPU seconds (the orchestrator adds the server's). */
export type LoadResult = Pick<
  LoadFigures,
  "requests" | "reqPerSec" | "p50Ms" | "p99Ms" | "non2xx" | "errors"
> & {
  loaderCpuS: number;
};

// autocannon adds an abort listener per connection to one signal.
setMaxListeners(0);

/** Each request takes the next header set (one per viewer: per-user limits and caches see many users). */
function rotate(sets: Record<string, string>[]) {
  let i = 0;
  return (req: Request): Request => {
    const set = sets[i++ % sets.length];
    return { ...req, headers: { ...req.headers, ...set } };
  };
}

export async function runLoad(args: LoadArgs, io: TaskIo): Promise<LoadResult> {
  const common = {
    url: args.url,
    method: (args.method ?? "GET") as "GET",
    headers: args.headers ?? {},
    ...(args.body !== undefined ? { body: args.body } : {}),
    ...(args.headerSets?.length ? { requests: [{ setupRequest: rotate(args.headerSets) }] } : {}),
  };
  if (args.warmup > 0)
    await autocannon({ ...common, connections: Math.min(8, args.connections), amount: args.warmup });
  // The orchestrator reads the server's CPU counter between these two messages.
  await io.send("warm");
  await io.next();
  const cpu0 = process.cpuUsage();
  const r = await autocannon({ ...common, connections: args.connections, duration: args.duration });
  const cpu = process.cpuUsage(cpu0);
  return {
    requests: r.requests.total,
    reqPerSec: r.requests.average,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    non2xx: r.non2xx,
    // autocannon counts a timeout as an error too (errors includes timeouts): adding them counted it twice.
    errors: r.errors,
    loaderCpuS: (cpu.user + cpu.system) / 1e6,
  };
}
