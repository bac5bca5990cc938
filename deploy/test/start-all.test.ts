import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

// `npm start` under a supervisor: the signal goes to the npm process itself, as `docker stop`,
// systemd or a plain `kill <pid>` would send it.
const root = fileURLToPath(new URL("../..", import.meta.url));

interface Started {
  npm: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
  /** Pids of start-all and the three services. */
  pids: number[];
  urls: string[];
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

const childrenOf = async (pid: number) =>
  (await readFile(`/proc/${pid}/task/${pid}/children`, "utf8"))
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map(Number);

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function startNpm(): Promise<Started> {
  const dataDir = await mkdtemp(join(tmpdir(), "start-all-"));
  // Each service on its own SQLite file: a DATABASE_URL would be shared by all three.
  const { DATABASE_URL: _ignored, ...inherited } = process.env;
  const npm = spawn("npm", ["start"], {
    cwd: root,
    env: { ...inherited, GALLERY_PORT: "0", PLATFORM_PORT: "0", BRIDGE_PORT: "0", DATA_DIR: dataDir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const exited = new Promise<number | null>((resolve) => npm.on("exit", (code) => resolve(code)));
  const urls = await new Promise<string[]>((resolve, reject) => {
    const onData = (b: Buffer) => {
      out += b.toString();
      const found = [...out.matchAll(/"msg":"listening on (http:\/\/[^"]+)"/g)].map((m) => m[1] as string);
      if (found.length === 3) resolve(found);
    };
    npm.stdout.on("data", onData);
    npm.stderr.on("data", onData);
    exited.then(() => reject(new Error(`npm start exited early:\n${out}`)));
  });
  const [startAll] = await childrenOf(npm.pid as number);
  const pids = [startAll as number, ...(await childrenOf(startAll as number))];
  cleanups.push(async () => {
    for (const p of pids) if (alive(p)) process.kill(p, "SIGKILL");
    await rm(dataDir, { recursive: true, force: true });
  });
  return { npm, output: () => out, exited, pids, urls };
}

describe.skipIf(process.env.TEST_BACKEND === "postgres")("npm start under a supervisor", () => {
  it("passes SIGTERM sent to npm on to every service and exits 0 once all stopped", async () => {
    const s = await startNpm();
    expect(s.pids).toHaveLength(4);
    for (const url of s.urls) expect((await fetch(`${url}/healthz`)).status).toBe(200);
    s.npm.kill("SIGTERM");
    expect(await s.exited).toBe(0);
    for (const p of s.pids) expect(alive(p)).toBe(false);
    expect(s.output().match(/"msg":"stopped"/g)).toHaveLength(3);
  }, 90_000);

  it("a service that dies is reported and stops the others; the exit code is non-zero", async () => {
    const s = await startNpm();
    const [, , platform] = s.pids;
    process.kill(platform as number, "SIGKILL");
    expect(await s.exited).not.toBe(0);
    expect(s.output()).toContain("script-platform exited (SIGKILL); stopping the others");
    for (const p of s.pids) expect(alive(p)).toBe(false);
  }, 90_000);
});
