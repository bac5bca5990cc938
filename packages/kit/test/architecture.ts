import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

/** The checks of architecture.test.ts: source files, their imports, cycles, SQL and backend checks. */

/** Every .ts source under `dir` (no declaration files). */
export function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [p] : [];
  });
}

/** Relative imports of a file (static, re-exports, type-only and dynamic), resolved to .ts files. */
export function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const specs = [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)"(\.{1,2}\/[^"]+)"/g)].map(
    (m) => m[1] ?? "",
  );
  return specs
    .map((s) => resolve(dirname(file), s.replace(/\.js$/, ".ts")))
    .map((p) => (existsSync(p) ? p : join(p.replace(/\.ts$/, ""), "index.ts")))
    .filter((p) => existsSync(p));
}

/** A file's capability: its top folder, or the file itself at the top level. */
export const nodeOf = (rel: string) => (rel.includes("/") ? (rel.split("/")[0] as string) : rel);

/** The folder graph of a file graph (paths relative to src/), without self edges. */
export function folderGraph(fileGraph: Map<string, Set<string>>): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const [f, deps] of fileGraph) {
    const from = nodeOf(f);
    const set = out.get(from) ?? new Set<string>();
    for (const d of deps) if (nodeOf(d) !== from) set.add(nodeOf(d));
    out.set(from, set);
  }
  return out;
}

/** Strongly connected components with more than one node (Tarjan). */
export function cycles(graph: Map<string, Set<string>>): string[][] {
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

/**
 * A service's repository modules: files under db/ (schema, migrations) and files named
 * `repository.ts` or `<thing>-repository.ts` (the one suffix for that role).
 */
export const isRepository = (rel: string) =>
  rel.startsWith("db/") || /(^|\/)([^/]+-)?repository\.ts$/.test(rel);

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
export function withoutComments(text: string): string {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, " "))
    .replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
}

export interface Use {
  line: number;
  text: string;
  what: string;
}

/** Lines of `text` that use SQL. */
export function sqlUses(text: string): Use[] {
  const code = withoutComments(text);
  const out: Use[] = [];
  code.split("\n").forEach((l, i) => {
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

const BACKEND_CHECKS: RegExp[] = [
  // `x.backend === "postgres"`, `backend !== 'sqlite'`, and the comparison the other way round.
  /\bbackend\s*[!=]==?\s*["'](?:postgres|sqlite)["']/,
  /["'](?:postgres|sqlite)["']\s*[!=]==?\s*[\w$.?]*\bbackend\b/,
  // `switch (database.backend)`, `isPostgres(db)`, `adapter instanceof PostgresAdapter`.
  /\bswitch\s*\(\s*[\w$.?]*\bbackend\s*\)/,
  /\bis(?:Postgres|Sqlite)\s*\(/,
  /\binstanceof\s+(?:Postgres|Sqlite)(?:Adapter|Dialect)\b/,
];

/**
 * Lines of `text` that branch on the database backend (`x.backend === "postgres"`, `isPostgres(db)`
 * and the like). Services ask the kit's Dialect for the property they need instead
 * (`sharedByProcesses`, `autocommitWrites`, `groupsReads`, ...).
 */
export function backendChecks(text: string): Use[] {
  const out: Use[] = [];
  withoutComments(text)
    .split("\n")
    .forEach((l, i) => {
      if (BACKEND_CHECKS.some((re) => re.test(l)))
        out.push({ line: i + 1, text: l.trim(), what: "backend check" });
    });
  return out;
}

/** The part of a source file outside import statements (line numbers kept). */
const withoutImports = (code: string) =>
  code.replace(/^\s*import\s[\s\S]*?from\s*["'][^"']+["'];?/gm, (s) => s.replace(/[^\n]/g, " "));

/**
 * Lines that take the whole service context (`ctx: GalleryContext`) rather than the parts a module
 * needs (`Pick<GalleryContext, "database" | "clock">` or its own deps type).
 */
export function wholeContextUses(text: string, contextType: string): Use[] {
  const re = new RegExp(`\\b[\\w$]+\\??\\s*:\\s*${contextType}\\b(?!\\s*[[.<])`);
  const out: Use[] = [];
  withoutImports(withoutComments(text))
    .split("\n")
    .forEach((l, i) => {
      if (re.test(l)) out.push({ line: i + 1, text: l.trim(), what: "whole context" });
    });
  return out;
}

/** What a class must not take in its constructor: collaborators belong to factories with a deps object. */
const COLLABORATOR =
  /:\s*(?:[\w$]+Deps|[\w$]+Context|Database(?:<[^>]*>)?|Kysely(?:<[^>]*>)?|Logger|Clock|[\w$]+Service|[\w$]+Repository)\b/;

/**
 * Classes whose constructor takes collaborators (a deps object, a database, a logger, a clock, a
 * service). Classes are left for errors and plain data structures; the rest are factories.
 */
export function collaboratorClasses(text: string): Use[] {
  const code = withoutComments(text);
  const out: Use[] = [];
  for (const m of code.matchAll(/\bclass\s+([\w$]+)[^{]*\{/g)) {
    const body = code.slice((m.index ?? 0) + m[0].length);
    const ctor = /\bconstructor\s*\(([\s\S]*?)\)\s*\{/.exec(body);
    // Only this class's own constructor: it comes before the next class declaration.
    const next = body.search(/\bclass\s+[\w$]+[^{]*\{/);
    if (!ctor || (next >= 0 && (ctor.index ?? 0) > next)) continue;
    if (COLLABORATOR.test(ctor[1] ?? ""))
      out.push({ line: code.slice(0, m.index).split("\n").length, text: `class ${m[1]}`, what: "class" });
  }
  return out;
}
