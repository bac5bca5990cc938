#!/usr/bin/env node
// `npm run bench [name ...]`: runs bench/<name>/run.ts (all when no name is given) against the
// TypeScript sources, each in its own process, and prints their figures.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
if (args.includes("--help")) {
  process.stdout.write(
    "Usage: npm run bench [-- name ...]\n\nRuns bench/<name>/run.ts for each name (default: all).\n" +
      "PostgreSQL figures need DATABASE_URL (a server where the bench may create databases).\n",
  );
  process.exit(0);
}
const all = readdirSync(here, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(here, d.name, "run.ts")))
  .map((d) => d.name)
  .sort();
const chosen = args.length > 0 ? args : all;
let failed = 0;
for (const name of chosen) {
  process.stdout.write(`\n=== bench ${name} ===\n`);
  const r = spawnSync(
    process.execPath,
    ["--conditions=source", "--import", "tsx", join(here, name, "run.ts")],
    {
      stdio: "inherit",
      env: { ...process.env, TEST_BACKEND: process.env.TEST_BACKEND ?? "sqlite" },
    },
  );
  if (r.status !== 0) failed += 1;
}
process.exit(failed > 0 ? 1 : 0);
