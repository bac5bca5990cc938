import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// The capabilities import each other one way (issue #10 item 6: dispatch/, triggers/ and
// execution/ used to form a nine-node cycle with config, context, control, realtime, sandbox and
// sdk). Each top-level file (app.ts, context.ts, config.ts…) counts as its own node; app.ts is
// the composition root, which imports everything and is imported by nothing.
const SRC = fileURLToPath(new URL("../src", import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [p] : [];
  });
}

/** Relative imports of a file (static, re-exports, type-only and dynamic), resolved to .ts files. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const specs = [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)"(\.{1,2}\/[^"]+)"/g)].map(
    (m) => m[1] ?? "",
  );
  return specs
    .map((s) => resolve(dirname(file), s.replace(/\.js$/, ".ts")))
    .map((p) => (existsSync(p) ? p : join(p.replace(/\.ts$/, ""), "index.ts")))
    .filter((p) => existsSync(p));
}

const nodeOf = (file: string) => {
  const rel = relative(SRC, file);
  return rel.includes("/") ? dirname(rel) : rel;
};

/** Strongly connected components with more than one node (Tarjan). */
function cycles(graph: Map<string, Set<string>>): string[][] {
  let index = 0;
  const stack: string[] = [];
  const on = new Set<string>();
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const out: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v) ?? 0, idx.get(w) ?? 0));
    }
    if (low.get(v) === idx.get(v)) {
      const c: string[] = [];
      let w: string | undefined;
      do {
        w = stack.pop();
        if (w !== undefined) {
          on.delete(w);
          c.push(w);
        }
      } while (w !== undefined && w !== v);
      if (c.length > 1) out.push(c.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return out;
}

// Only repository modules touch SQL (DESIGN; issue #10 item 6): routes stay thin and domain
// modules are testable without HTTP. A repository is a file under db/, a `*-repo.ts` or a
// `repository.ts`; anything else that builds, compiles or runs a query fails here.
const isRepository = (rel: string) =>
  rel.startsWith("db/") || /(^|\/)[^/]+-repo\.ts$/.test(rel) || /(^|\/)repository\.ts$/.test(rel);

const SQL_USES: { name: string; re: RegExp }[] = [
  {
    name: "Kysely query builder",
    re: /\.(?:selectFrom|selectNoFrom|insertInto|replaceInto|updateTable|deleteFrom|mergeInto)\s*\(/,
  },
  { name: "running a query", re: /\.(?:execute|executeTakeFirst|executeTakeFirstOrThrow|executeQuery)\s*\(/ },
  {
    name: "sql template",
    re: /\bsql\s*(?:<[^>\n]*>\s*)?`|\bsql\.(?:raw|ref|lit|id|join|table|val|value)\s*\(/,
  },
  { name: "sql import", re: /import\s*\{[^}]*(?<!type\s)\bsql\b[^}]*\}\s*from\s*"(?:@app\/kit\/db|kysely)"/ },
  { name: "compiled or prepared statement", re: /\bCompiledQuery\b|\bpreparedQuery\s*\(/ },
  { name: "row lock", re: /\.(?:forUpdate|forShare|forUpdateSkipLocked)\s*\(/ },
];

/** Comments blanked out (line numbers kept), so prose about queries does not count. */
function withoutComments(text: string): string {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, " "))
    .replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
}

/** Lines of `text` that use SQL, as `line: text (what)`. */
function sqlUses(text: string): { line: number; text: string; what: string }[] {
  const code = withoutComments(text);
  const lines = code.split("\n");
  const out: { line: number; text: string; what: string }[] = [];
  lines.forEach((l, i) => {
    const hit = SQL_USES.find((u) => u.re.test(l));
    if (hit) out.push({ line: i + 1, text: l.trim(), what: hit.name });
  });
  // An import spanning several lines: judge the whole statement.
  for (const m of code.matchAll(/import\s*\{[^}]*\}\s*from\s*"[^"]+"/g)) {
    const stmt = m[0].replace(/\s+/g, " ");
    const line = code.slice(0, m.index).split("\n").length;
    if (SQL_USES[3]?.re.test(stmt) && !out.some((o) => o.line === line))
      out.push({ line, text: stmt, what: "sql import" });
  }
  return out;
}

/**
 * Non-repository files that may still hold SQL, each with the most lines it may have and why.
 * Keep it short; an entry whose file no longer holds SQL fails the test (remove it).
 */
const SQL_ALLOWED: { file: string; max: number; reason: string }[] = [
  {
    file: "dispatch/group-commit.ts",
    max: 6,
    reason:
      "compiledPerRowCount/multiRowStatement compile and run statements built in the repo modules; name no table",
  },
];

describe("SQL only in repository modules", () => {
  it("recognises queries, sql templates and raw statements (a route that queries fails)", () => {
    const route = [
      'import { sql } from "@app/kit/db";',
      '// database.db.selectFrom("apps") in a comment does not count',
      'app.get("/x", async () => database.db.selectFrom("apps").selectAll().execute());',
      "await sql`LOCK TABLE admins`.execute(trx);",
      "const r = await trx",
      '  .deleteFrom("routes")',
      '  .where("id", "=", id)',
      "  .executeTakeFirst();",
      "await d.forUpdate(q);",
      'const url = "http://example.com"; const n = items.filter(Boolean).length;',
      "import {",
      "  type Database,",
      "  sql,",
      '} from "@app/kit/db";',
    ].join("\n");
    expect(sqlUses(route).map((u) => u.line)).toEqual([1, 3, 4, 6, 8, 9, 11]);
    expect(sqlUses('import { type Database, type Kysely } from "@app/kit/db";')).toEqual([]);
    expect(isRepository("control/apps-repo.ts")).toBe(true);
    expect(isRepository("triggers/repository.ts")).toBe(true);
    expect(isRepository("db/migrations/0001_control_plane.ts")).toBe(true);
    expect(isRepository("http/routes/apps.ts")).toBe(false);
    expect(isRepository("control/repo-helpers.ts")).toBe(false);
  });

  const found = sources(SRC)
    .map((f) => relative(SRC, f))
    .filter((rel) => !isRepository(rel))
    .map((rel) => ({ rel, uses: sqlUses(readFileSync(join(SRC, rel), "utf8")) }))
    .filter((f) => f.uses.length > 0);

  it("has no SQL outside db/ and repository modules (beyond the allow-list)", () => {
    const offending = found.flatMap((f) => {
      const allowed = SQL_ALLOWED.find((a) => a.file === f.rel);
      if (allowed && f.uses.length <= allowed.max) return [];
      return f.uses.map((u) => `${f.rel}:${u.line} ${u.what}: ${u.text}`);
    });
    expect(offending).toEqual([]);
  });

  it("keeps the allow-list honest (every entry still needed, each with a reason)", () => {
    for (const a of SQL_ALLOWED) {
      expect(a.reason.length, a.file).toBeGreaterThan(10);
      expect(
        found.some((f) => f.rel === a.file),
        `${a.file} holds no SQL any more: remove it from SQL_ALLOWED`,
      ).toBe(true);
    }
  });
});

describe("module structure of src/", () => {
  const files = sources(SRC);
  const fileGraph = new Map(
    files.map((f) => [relative(SRC, f), new Set(importsOf(f).map((i) => relative(SRC, i)))]),
  );
  const folderGraph = new Map<string, Set<string>>();
  for (const [f, deps] of fileGraph) {
    const from = nodeOf(join(SRC, f));
    const set = folderGraph.get(from) ?? new Set<string>();
    for (const d of deps) if (nodeOf(join(SRC, d)) !== from) set.add(nodeOf(join(SRC, d)));
    folderGraph.set(from, set);
  }

  it("reads the imports it checks", () => {
    expect(files.length).toBeGreaterThan(100);
    expect(fileGraph.get("app.ts")).toContain("dispatch/dispatch.ts");
    expect(fileGraph.get("dispatch/dispatcher.ts")).toContain("dispatch/job.ts");
  });

  it("has no import cycle between files", () => {
    expect(cycles(fileGraph)).toEqual([]);
  });

  it("has no import cycle between capabilities (folders; each top-level file on its own)", () => {
    expect(cycles(folderGraph)).toEqual([]);
  });

  it("keeps dispatch/ below execution/ and triggers/ the trigger model", () => {
    expect(folderGraph.get("dispatch")).not.toContain("execution");
    expect(folderGraph.get("triggers")).not.toContain("dispatch");
    expect(folderGraph.get("triggers")).not.toContain("execution");
    expect(folderGraph.get("sdk")).not.toContain("dispatch");
    expect(folderGraph.get("config.ts") ?? new Set()).toEqual(new Set());
  });
});
