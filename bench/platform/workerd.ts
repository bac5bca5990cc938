// Cloudflare's own runtime as a peer baseline: workerd (npm package `workerd`, the binary inside
// `@cloudflare/workerd-<platform>`) serving a hello worker that answers the same bytes as the
// platform's hello route. workerd runs in its own process, started by this target's process; its
// pid goes in `info.cpuPid`, so the harness counts workerd's CPU, not this launcher's.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ServerTarget } from "../harness/index.js";

/** The workerd binary of this machine's platform (the package's optional dependency). */
function binary(): string {
  const require = createRequire(import.meta.url);
  const arch = process.arch === "x64" ? "64" : process.arch;
  return require.resolve(`@cloudflare/workerd-${process.platform}-${arch}/bin/workerd`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const addr = s.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/**
 * workerd serving the hello worker (`body`, `contentType`), or `worker`, an ES module of its own;
 * `network` lets the worker's fetch reach this machine's loopback (workerd's default outbound
 * allows public addresses only).
 */
export async function startWorkerd(
  args: { body: string; contentType: string } | { worker: string; network?: boolean },
): Promise<ServerTarget> {
  const dir = mkdtempSync(join(tmpdir(), "bench-workerd-"));
  // The worker builds its response per request, as a script handler does.
  writeFileSync(
    join(dir, "worker.js"),
    "worker" in args
      ? args.worker
      : `const body = ${JSON.stringify(args.body)};
export default { async fetch() { return new Response(body, { headers: { "content-type": ${JSON.stringify(args.contentType)} } }); } };
`,
  );
  const network = "worker" in args && args.network;
  writeFileSync(
    join(dir, "config.capnp"),
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .hello)${network ? `, (name = "loopback", network = (allow = ["public", "private", "local"]))` : ""} ],
  sockets = [ ( name = "http", address = "127.0.0.1:0", http = (), service = "main" ) ]
);
const hello :Workerd.Worker = (
  modules = [ (name = "worker", esModule = embed "worker.js") ],
  compatibilityDate = "2024-09-23",${network ? `\n  globalOutbound = "loopback",` : ""}
);
`,
  );
  const port = await freePort();
  const proc = spawn(
    binary(),
    ["serve", join(dir, "config.capnp"), "--socket-addr", `http=127.0.0.1:${port}`],
    {
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let stderr = "";
  proc.stderr?.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  const url = `http://127.0.0.1:${port}`;
  // Up once it answers.
  for (let i = 0; ; i++) {
    if (proc.exitCode !== null) throw new Error(`workerd exited: ${stderr}`);
    try {
      if ((await fetch(`${url}/hello`)).ok) break;
    } catch {
      // not listening yet
    }
    if (i > 200) throw new Error(`workerd did not answer: ${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    info: { cpuPid: proc.pid },
    close: async () => {
      const exited = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGTERM");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
