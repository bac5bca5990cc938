#!/usr/bin/env node
// `npm start` and the image's `all`: the three services in one process tree on their own ports
// (the common contract), safe under a supervisor:
// - SIGTERM/SIGINT/SIGHUP are passed on to every service, and this process exits only once all of
//   them stopped: 0 when every one stopped cleanly, 1 otherwise;
// - a service that exits on its own is reported and stops the others (exit non-zero), so the
//   supervisor restarts the whole group;
// - the services run in their own process group, so a terminal's Ctrl-C reaches them once
//   (through here), not twice (a second signal tells a service to exit at once);
// - should the parent (npm) go away without passing a signal on, the group stops too.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

if (process.argv.includes("--help")) {
  process.stdout.write(`Usage: npm start

Starts event-gallery on ${process.env.GALLERY_PORT ?? 3001}, script-platform on ${process.env.PLATFORM_PORT ?? 3002}
and portal-bridge on ${process.env.BRIDGE_PORT ?? 3003}, each with its embedded defaults (SQLite under ./data/<service>).
GALLERY_PORT, PLATFORM_PORT and BRIDGE_PORT move them; DATA_DIR, when set, is the parent folder
(each service gets DATA_DIR/<service>); every other variable is passed to all three
(run 'node services/<name>/dist/main.js --help' to see each service's variables).
SIGINT/SIGTERM stops all three; the exit code is 0 only when all three stopped cleanly.
A service that exits on its own stops the other two.
`);
  process.exit(0);
}

/** How long the services get to stop (each stops within 10 s) before they are killed. */
const STOP_DEADLINE_MS = 12_000;

const services = [
  { name: "event-gallery", port: process.env.GALLERY_PORT ?? "3001" },
  { name: "script-platform", port: process.env.PLATFORM_PORT ?? "3002" },
  { name: "portal-bridge", port: process.env.BRIDGE_PORT ?? "3003" },
];

let stopping = false;
let failed = false;
const running = new Set();

for (const { name, port } of services) {
  const main = fileURLToPath(new URL(`../services/${name}/dist/main.js`, import.meta.url));
  const child = spawn(process.execPath, [main], {
    stdio: ["ignore", "inherit", "inherit"],
    env: {
      ...process.env,
      PORT: port,
      ...(process.env.DATA_DIR ? { DATA_DIR: join(process.env.DATA_DIR, name) } : {}),
    },
    detached: true,
  });
  running.add(child);
  child.on("error", (err) => {
    process.stderr.write(`${name} could not start (${err.message})\n`);
  });
  child.on("exit", (code, signal) => {
    running.delete(child);
    const clean = code === 0;
    if (!clean) failed = true;
    if (!stopping) {
      failed = true;
      process.stderr.write(`${name} exited (${signal ?? `code ${code}`}); stopping the others\n`);
      stop("SIGTERM");
    } else if (!clean) {
      process.stderr.write(`${name} stopped with ${signal ?? `code ${code}`}\n`);
    }
    if (running.size === 0) process.exit(failed ? 1 : 0);
  });
}

/** Pass a signal on to every running service; the first one also arms the kill deadline. */
function stop(signal) {
  if (!stopping) {
    stopping = true;
    setTimeout(() => {
      process.stderr.write("services still running after the deadline; killing them\n");
      failed = true;
      for (const c of running) c.kill("SIGKILL");
    }, STOP_DEADLINE_MS).unref();
  }
  for (const c of running) c.kill(signal);
}

for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(sig, () => stop(sig === "SIGHUP" ? "SIGTERM" : sig));
}

// npm passes signals on to its script, but a parent killed outright cannot: then this process is
// re-parented, and the group stops rather than hold the ports with nobody to stop it.
const parent = process.ppid;
setInterval(() => {
  if (!stopping && process.ppid !== parent) {
    process.stderr.write("parent process went away; stopping\n");
    stop("SIGTERM");
  }
}, 1000).unref();
