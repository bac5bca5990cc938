#!/usr/bin/env node
// `npm run bench [name ...]`: builds the kit's and the services' server code (their dist/, which
// the package entry points `@app/*` resolve to), then runs bench/<name>/run.ts (all when no name is
// given), each in its own process, and prints their figures. BENCH_BUILD=0 skips the build.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");
/** What the benches import: server code only (the web apps' bundles come from `npm run build`). */
const built = [
  "packages/kit",
  "services/portal-bridge",
  "services/event-gallery",
  "services/script-platform",
];
const args = process.argv.slice(2);
if (args.includes("--help")) {
  process.stdout.write(
    "Usage: npm run bench [-- name ...]\n\nRuns bench/<name>/run.ts for each name (default: all).\n" +
      "PostgreSQL figures need DATABASE_URL (a server where the bench may create databases).\n" +
      "It first builds the server code of the kit and the services (BENCH_BUILD=0: use dist/ as it is).\n",
  );
  process.exit(0);
}
const all = readdirSync(here, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(here, d.name, "run.ts")))
  .map((d) => d.name)
  .sort();
const chosen = args.length > 0 ? args : all;
const unknown = chosen.filter((name) => !all.includes(name));
if (unknown.length > 0) {
  process.stderr.write(`No bench named ${unknown.join(", ")}; there are: ${all.join(", ")}\n`);
  process.exit(2);
}
if (process.env.BENCH_BUILD !== "0") {
  const tsc = join(root, "node_modules", ".bin", "tsc");
  for (const pkg of built) {
    process.stdout.write(`building ${pkg} (dist/)\n`);
    const r = spawnSync(tsc, ["-p", join(root, pkg, "tsconfig.build.json")], { stdio: "inherit" });
    if (r.status !== 0) {
      process.stderr.write(`Building ${pkg} failed: the benches run the built servers.\n`);
      process.exit(1);
    }
  }
}
let failed = 0;
for (const name of chosen) {
  process.stdout.write(`\n=== bench ${name} ===\n`);
  const r = spawnSync(process.execPath, ["--import", "tsx", join(here, name, "run.ts")], {
    stdio: "inherit",
    env: { ...process.env, TEST_BACKEND: process.env.TEST_BACKEND ?? "sqlite" },
  });
  if (r.status !== 0) failed += 1;
}
process.exit(failed > 0 ? 1 : 0);
