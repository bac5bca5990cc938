#!/usr/bin/env node
// `npm start`: all three services in one process tree on their own ports (contracts/common.md).
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

if (process.argv.includes("--help")) {
  process.stdout.write(`Usage: npm start

Starts event-gallery on ${process.env.GALLERY_PORT ?? 3001}, script-platform on ${process.env.PLATFORM_PORT ?? 3002}
and portal-bridge on ${process.env.BRIDGE_PORT ?? 3003}, each with its embedded defaults (SQLite under ./data/<service>).
GALLERY_PORT, PLATFORM_PORT and BRIDGE_PORT move them; every other variable is passed to all three
(run 'node services/<name>/dist/main.js --help' to see each service's variables).
SIGINT/SIGTERM stops all three.
`);
  process.exit(0);
}

const services = [
  { name: "event-gallery", port: process.env.GALLERY_PORT ?? "3001" },
  { name: "script-platform", port: process.env.PLATFORM_PORT ?? "3002" },
  { name: "portal-bridge", port: process.env.BRIDGE_PORT ?? "3003" },
];

const children = services.map(({ name, port }) => {
  const main = fileURLToPath(new URL(`../services/${name}/dist/main.js`, import.meta.url));
  const child = spawn(process.execPath, [main], { stdio: "inherit", env: { ...process.env, PORT: port } });
  child.on("exit", (code, signal) => {
    if (stopping) return;
    process.stderr.write(`${name} exited (${signal ?? code}); stopping the others\n`);
    stop(code ?? 1);
  });
  return child;
});

let stopping = false;
function stop(code) {
  stopping = true;
  let left = children.filter((c) => c.exitCode === null && c.signalCode === null).length;
  if (left === 0) process.exit(code);
  for (const c of children) {
    if (c.exitCode !== null || c.signalCode !== null) continue;
    c.once("exit", () => {
      left -= 1;
      if (left === 0) process.exit(code);
    });
    c.kill("SIGTERM");
  }
  setTimeout(() => process.exit(code || 1), 12_000).unref();
}
process.on("SIGINT", () => stop(0));
process.on("SIGTERM", () => stop(0));
