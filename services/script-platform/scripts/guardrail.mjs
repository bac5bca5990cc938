#!/usr/bin/env node
// Versioning guardrail (seed, "Versioning"): migrations are named NNNN_name.ts and numbered
// 0001..N with no gaps (each file's `version:` equals its number, index.ts lists them in
// order), the script SDK version is MAJOR.MINOR, and the package version is MAJOR.MINOR.PATCH.
// Usage: node scripts/guardrail.mjs [service-root]   (exit 0 = ok, 1 = violations listed)
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), ".."));
const problems = [];

const migrationsDir = join(root, "src/db/migrations");
const files = readdirSync(migrationsDir)
  .filter((f) => f.endsWith(".ts") && f !== "index.ts" && !f.endsWith(".test.ts"))
  .sort();
const numbers = [];
for (const f of files) {
  const m = /^(\d{4})_([a-z0-9_]+)\.ts$/.exec(f);
  if (!m) {
    problems.push(`migration file ${f} is not named NNNN_snake_name.ts`);
    continue;
  }
  const n = Number(m[1]);
  numbers.push(n);
  const text = readFileSync(join(migrationsDir, f), "utf8");
  const v = /\bversion:\s*(\d+)/.exec(text);
  if (!v) problems.push(`migration ${f} declares no version`);
  else if (Number(v[1]) !== n) problems.push(`migration ${f} declares version ${v[1]}, expected ${n}`);
}
numbers.forEach((n, i) => {
  if (n !== i + 1)
    problems.push(
      `migrations are not sequential: found ${String(n).padStart(4, "0")} where ${String(i + 1).padStart(4, "0")} belongs`,
    );
});
if (new Set(numbers).size !== numbers.length) problems.push("two migrations share a number");

const index = readFileSync(join(migrationsDir, "index.ts"), "utf8");
const listed = [...index.matchAll(/from\s+"\.\/(\d{4})_[a-z0-9_]+\.js"/g)].map((m) => Number(m[1]));
const expected = numbers.slice().sort((a, b) => a - b);
if (listed.join(",") !== expected.join(","))
  problems.push(`migrations/index.ts imports [${listed.join(", ")}], expected [${expected.join(", ")}]`);

const versionTs = readFileSync(join(root, "src/version.ts"), "utf8");
const sdk = /SDK_VERSION\s*=\s*"([^"]*)"/.exec(versionTs)?.[1];
if (sdk === undefined) problems.push("src/version.ts declares no SDK_VERSION");
else if (!/^(0|[1-9]\d*)\.(0|[1-9]\d*)$/.test(sdk)) problems.push(`SDK version ${sdk} is not MAJOR.MINOR`);

const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
if (!/^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/.test(String(pkg.version)))
  problems.push(`package version ${pkg.version} is not MAJOR.MINOR.PATCH`);

if (problems.length > 0) {
  for (const p of problems) process.stderr.write(`guardrail: ${p}\n`);
  process.exit(1);
}
process.stdout.write(`guardrail: ok (${numbers.length} migrations, sdk ${sdk}, product ${pkg.version})\n`);
