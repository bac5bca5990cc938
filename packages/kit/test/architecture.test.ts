import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  backendChecks,
  collaboratorClasses,
  cycles,
  folderGraph,
  importsOf,
  isRepository,
  sources,
  sqlUses,
  wholeContextUses,
  withoutComments,
} from "./architecture.js";

/**
 * The repository's architecture rules, for all four packages (DESIGN.md): no import cycles
 * between files or between capabilities (folders; each top-level file on its own), allowed
 * folder imports, SQL only in repository modules, and backend differences (`backend ===
 * "postgres"`, `isPostgres(db)`) only in repositories or the kit's database layer. There is no
 * list of exceptions: code that needs one moves into a repository or asks the kit's Dialect.
 */
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

interface PackageRules {
  name: string;
  src: string;
  /** The kit's data layer is its db/ folder; a service's is db/ and its repository modules. */
  repository: (rel: string) => boolean;
  /** Folder edges that must not exist: [from, to]. */
  forbidden: [string, string][];
  /** Folders (or top-level files) that import nothing of their package. */
  leaves: string[];
  /** [folder, its only importers]: the routes sit at the top, only the app wires them. */
  importedOnlyBy: [string, string[]][];
  /** The service's context type: only the wiring (app.ts, context.ts, http/) takes all of it. */
  context?: string;
}

const kitDb = (rel: string) => rel.startsWith("db/") || rel === "db.ts";

const PACKAGES: PackageRules[] = [
  {
    name: "kit",
    src: "packages/kit/src",
    repository: kitDb,
    forbidden: [["db", "http"]],
    leaves: ["ids.ts", "clock.ts", "config.ts", "errors.ts"],
    importedOnlyBy: [],
  },
  {
    name: "portal-bridge",
    src: "services/portal-bridge/src",
    repository: isRepository,
    // The digest builds on the MCP tools' helpers; its whats_new tool reaches the MCP server
    // through app.ts (a tool registrar), never by mcp/ importing digest/.
    forbidden: [["mcp", "digest"]],
    leaves: ["upstream", "state", "version.ts"],
    importedOnlyBy: [["http", ["app.ts", "oauth"]]],
  },
  {
    name: "event-gallery",
    src: "services/event-gallery/src",
    repository: isRepository,
    forbidden: [],
    leaves: ["db", "config.ts", "version.ts"],
    importedOnlyBy: [["http", ["app.ts"]]],
    context: "GalleryContext",
  },
  {
    name: "script-platform",
    src: "services/script-platform/src",
    repository: isRepository,
    // The capabilities import each other one way: dispatch/ below execution/, triggers/ the
    // trigger model, the SDK below dispatch/.
    forbidden: [
      ["dispatch", "execution"],
      ["triggers", "dispatch"],
      ["triggers", "execution"],
      ["sdk", "dispatch"],
    ],
    leaves: ["config.ts", "db", "crypto"],
    importedOnlyBy: [["http", ["app.ts"]]],
    context: "PlatformContext",
  },
];

describe("the checks themselves", () => {
  it("recognise queries, sql templates and raw statements (a route that queries fails)", () => {
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
  });

  it("recognise backend checks, not prose about them", () => {
    const code = [
      'if (database.backend === "postgres") notify();',
      '// backend === "postgres" in a comment',
      'const remote = dialect.backend !== "sqlite";',
      "const backend = pickOne();",
      'const { backend } = database; if (backend === "sqlite") poll();',
      "if ('postgres' === db.backend) listen();",
      "const q = isPostgres(reader) ? batched : single;",
      "switch (database.backend) {",
      "if (db.getExecutor().adapter instanceof PostgresAdapter) x();",
      "if (database.dialect.sharedByProcesses) notify();",
    ].join("\n");
    expect(backendChecks(code).map((u) => u.line)).toEqual([1, 3, 5, 6, 7, 8, 9]);
  });

  it("recognise a module taking the whole context, not the parts it picks", () => {
    const code = [
      'import type { GalleryContext } from "../context.js";',
      "export async function publicEvent(ctx: GalleryContext) {}",
      'export type FeedDeps = Pick<GalleryContext, "database" | "clock">;',
      "function f(deps: FeedDeps, opts?: GalleryContext) {}",
      "// ctx: GalleryContext in a comment",
      'const s: GalleryContext["settings"] = x;',
    ].join("\n");
    expect(wholeContextUses(code, "GalleryContext").map((u) => u.line)).toEqual([2, 4]);
  });

  it("recognise classes that take collaborators, not errors or data structures", () => {
    const code = [
      "export class Lru<K, V> { constructor(private readonly max: number) {} }",
      "export class SizeLimitError extends Error { constructor(message: string) { super(message); } }",
      "export class GroupCommit {",
      "  constructor(private readonly deps: GroupCommitDeps) {}",
      "}",
      "class Waker { resolve = () => {}; }",
      "class Engine { constructor(db: Database<PlatformDB>, log: Logger) {} }",
    ].join("\n");
    expect(collaboratorClasses(code).map((u) => u.text)).toEqual(["class GroupCommit", "class Engine"]);
  });

  it("know the repositories", () => {
    expect(isRepository("control/apps-repository.ts")).toBe(true);
    expect(isRepository("triggers/repository.ts")).toBe(true);
    expect(isRepository("metrics-repository.ts")).toBe(true);
    expect(isRepository("db/migrations/0001_control_plane.ts")).toBe(true);
    expect(isRepository("http/routes/apps.ts")).toBe(false);
    expect(isRepository("control/repository-helpers.ts")).toBe(false);
    // Other names for the role are not repositories: their SQL fails the test.
    expect(isRepository("control/apps-repo.ts")).toBe(false);
    expect(isRepository("export/repo.ts")).toBe(false);
    expect(isRepository("social/repositories.ts")).toBe(false);
  });

  it("find cycles", () => {
    const g = new Map([
      ["a", new Set(["b"])],
      ["b", new Set(["c"])],
      ["c", new Set(["a"])],
      ["d", new Set(["a"])],
    ]);
    expect(cycles(g)).toEqual([["a", "b", "c"]]);
  });
});

describe.each(PACKAGES)("$name", (pkg) => {
  const src = join(ROOT, pkg.src);
  const files = sources(src).map((f) => relative(src, f));
  const text = new Map(files.map((rel) => [rel, readFileSync(join(src, rel), "utf8")]));
  const fileGraph = new Map(
    files.map((rel) => [rel, new Set(importsOf(join(src, rel)).map((i) => relative(src, i)))]),
  );
  const folders = folderGraph(fileGraph);

  it("names every repository module repository.ts or <thing>-repository.ts", () => {
    const otherNames = files.filter((rel) => /(^|\/)([^/]+[-_.])?(repo|repos|repositories)\.ts$/i.test(rel));
    expect(otherNames).toEqual([]);
  });

  it("reads the imports it checks", () => {
    expect(files.length).toBeGreaterThan(5);
    expect([...fileGraph.values()].some((deps) => deps.size > 0)).toBe(true);
  });

  it("has no import cycle between files", () => {
    expect(cycles(fileGraph)).toEqual([]);
  });

  it("has no import cycle between capabilities (folders; each top-level file on its own)", () => {
    expect(cycles(folders)).toEqual([]);
  });

  it("imports between folders only the allowed way", () => {
    const wrong = pkg.forbidden.filter(([from, to]) => folders.get(from)?.has(to));
    expect(wrong).toEqual([]);
    for (const leaf of pkg.leaves) expect([...(folders.get(leaf) ?? [])], leaf).toEqual([]);
    for (const [folder, by] of pkg.importedOnlyBy) {
      const importers = [...folders].filter(([, to]) => to.has(folder)).map(([from]) => from);
      expect(
        importers.filter((f) => !by.includes(f)),
        `importers of ${folder}/`,
      ).toEqual([]);
    }
  });

  const outsideRepositories = (kind: string, uses: (code: string) => { line: number; text: string }[]) =>
    it(`has no ${kind} outside repositories`, () => {
      const offending = files
        .filter((rel) => !pkg.repository(rel))
        .flatMap((rel) => uses(text.get(rel) ?? "").map((u) => `${rel}:${u.line}: ${u.text}`));
      expect(offending).toEqual([]);
    });
  outsideRepositories("SQL", sqlUses);
  outsideRepositories("backend check", backendChecks);

  // Composition is one way (README): factories over explicit deps objects, wired in app.ts.
  it("composes modules with deps objects: no class takes collaborators", () => {
    const offending = files.flatMap((rel) =>
      collaboratorClasses(text.get(rel) ?? "").map((u) => `${rel}:${u.line}: ${u.text}`),
    );
    expect(offending).toEqual([]);
  });

  if (pkg.context) {
    const contextType = pkg.context;
    it(`takes the whole ${contextType} only in the wiring (app.ts, context.ts, http/)`, () => {
      const offending = files
        .filter((rel) => rel !== "app.ts" && rel !== "context.ts" && !rel.startsWith("http/"))
        .flatMap((rel) =>
          wholeContextUses(text.get(rel) ?? "", contextType).map((u) => `${rel}:${u.line}: ${u.text}`),
        );
      expect(offending).toEqual([]);
    });
  }

  it("strips comments without moving lines", () => {
    for (const [rel, t] of text)
      expect(withoutComments(t).split("\n").length, rel).toBe(t.split("\n").length);
  });
});
