// Shared by bench/platform-async and bench/platform: trigger runs measured inside a target
// process (see targets.ts), and a throwaway PostgreSQL database for a target.
import { randomBytes } from "node:crypto";
import pg from "pg";
import type { ServerProc } from "../harness/index.js";
import type { Figures } from "./targets.js";

/** Jobs sent one at a time after the burst (unloaded latency). */
export const SINGLE = 30;

export interface Measured {
  burst: Figures;
  single: Figures;
  cpuMsPerJob: number;
}

export async function measure(target: ServerProc, n: number): Promise<Measured> {
  const cpu0 = await target.cpuSeconds();
  await target.call("burst", n);
  const cpuMsPerJob = (((await target.cpuSeconds()) - cpu0) * 1000) / n;
  await target.call("single", SINGLE);
  const f = await target.call<{ burst: Figures; single: Figures }>("figures");
  await target.stop();
  return { ...f, cpuMsPerJob };
}

/** A fresh database on the PostgreSQL server at `adminUrl` for `fn`, dropped afterwards. */
export async function withDatabase<T>(adminUrl: string, fn: (url: string) => Promise<T>): Promise<T> {
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
