// Lists every real-time wait in test code (timers, sleeps, shell `sleep`, pg_sleep, Playwright's
// waitForTimeout) with the reason written next to it, and fails when one has none.
//
// A wait is explained by a comment containing `real-time:` on its own line or in the comment
// lines directly above it, e.g.
//   // real-time: the child process runs on the wall clock; this bounds how long we wait for it.
//   const timer = setTimeout(() => reject(new Error("no start")), 60_000);
// A test should await the condition instead (an event, a counter, a fake clock step); what stays
// is a deadline that fails the test, a pause the code under test defines in real time, or a
// foreign process that offers nothing to await.
//
// Usage: node scripts/test-sleeps.mjs [--quiet]   (exit 1 when a wait has no reason)
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const roots = ["packages", "services", "bench"].map((d) => join(root, d));
const skip = new Set(["node_modules", "dist", ".test-artifacts", ".bench-results", "web", "dashboard"]);

/** Test code: every .ts file under a `test` folder, and *.test.ts anywhere. */
function* testFiles(dir, inTest = false) {
  for (const name of readdirSync(dir)) {
    if (skip.has(name) && !inTest) continue;
    if (name === "node_modules" || name === "dist") continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* testFiles(path, inTest || name === "test");
    else if (name.endsWith(".ts") && (inTest || name.endsWith(".test.ts"))) yield path;
  }
}

const patterns = [
  // A timer of the host (not a clock's, not a spy's target).
  /(?<![.\w])(setTimeout|setInterval)\s*\(/,
  // node:timers/promises under any name the file gives it.
  /(?<![.\w])(delay|sleep|wait)\s*\(\s*\d/,
  /\bsleep\s+\d/,
  /pg_sleep\s*\(/,
  /waitForTimeout\s*\(/,
];

const isComment = (line) => /^\s*(\/\/|\/\*|\*)/.test(line);

function reasonFor(lines, i) {
  const own = lines[i].match(/real-time:\s*(.*?)\s*(\*\/)?$/);
  if (own) return own[1];
  const above = [];
  for (let j = i - 1; j >= 0 && isComment(lines[j]); j--) above.unshift(lines[j]);
  const text = above.map((l) => l.replace(/^\s*(\/\/|\/\*+|\*+\/?)\s?/, "").trim()).join(" ");
  const m = text.match(/real-time:\s*(.*)$/);
  return m ? m[1].replace(/\s*\*\/\s*$/, "") : null;
}

const found = [];
for (const dir of roots) {
  for (const file of testFiles(dir)) {
    if (file === fileURLToPath(import.meta.url)) continue;
    const lines = readFileSync(file, "utf8").split("\n");
    lines.forEach((line, i) => {
      if (isComment(line)) return;
      if (!patterns.some((p) => p.test(line))) return;
      found.push({
        where: `${relative(root, file)}:${i + 1}`,
        reason: reasonFor(lines, i),
        code: line.trim(),
      });
    });
  }
}

const missing = found.filter((f) => f.reason === null);
if (!process.argv.includes("--quiet"))
  for (const f of found) process.stdout.write(`${f.where}  ${f.reason ?? "NO REASON"}\n`);
for (const f of missing)
  process.stderr.write(
    `${f.where}: a real-time wait without a reason (await the condition, or explain it with a "real-time:" comment): ${f.code}\n`,
  );
process.stdout.write(
  `test-sleeps: ${found.length} real-time waits in tests, ${missing.length} without a reason\n`,
);
process.exit(missing.length > 0 ? 1 : 0);
