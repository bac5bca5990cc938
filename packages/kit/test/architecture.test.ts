import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  backendChecks,
  cycles,
  folderGraph,
  importsOf,
  isRepository,
  sources,
  sqlUses,
  withoutComments,
} from "./architecture.js";

/**
 * The repository's architecture rules, for all four packages (DESIGN.md): no import cycles
 * between files or between capabilities (folders; each top-level file on its own), allowed
 * folder imports, SQL only in repository modules, and backend differences (`backend ===
 * "postgres"`) only in repositories or the kit's database layer. Exceptions are listed below
 * with their reason; an entry that is no longer needed fails the test.
 */
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

interface Allowed {
  file: string;
  /** The most lines of that kind the file may hold. */
  max: number;
  reason: string;
}

interface PackageRules {
  name: string;
  src: string;
  /** The kit's data layer is its db/ folder; services also have `*-repo.ts` / `repository.ts` / `repo.ts`. */
  repository: (rel: string) => boolean;
  sqlAllowed: Allowed[];
  backendAllowed: Allowed[];
  /** Folder edges that must not exist: [from, to]. */
  forbidden: [string, string][];
  /** Folders (or top-level files) that import nothing of their package. */
  leaves: string[];
  /** Import cycles that exist today (sorted members), files then folders: to be broken, never grown. */
  knownCycles?: { files: string[][]; folders: string[][]; reason: string };
}

const kitDb = (rel: string) => rel.startsWith("db/") || rel === "db.ts";

const PACKAGES: PackageRules[] = [
  {
    name: "kit",
    src: "packages/kit/src",
    repository: kitDb,
    sqlAllowed: [
      {
        file: "http/readiness.ts",
        max: 3,
        reason: "/readyz runs its own SELECT 1 and reads schema_migrations, on any service's database",
      },
    ],
    backendAllowed: [
      {
        file: "backup.ts",
        max: 2,
        reason: "an archive holds the SQLite file (online backup) but only names pg_dump for PostgreSQL",
      },
    ],
    forbidden: [["db", "http"]],
    leaves: ["ids.ts", "clock.ts"],
  },
  {
    name: "portal-bridge",
    src: "services/portal-bridge/src",
    repository: isRepository,
    sqlAllowed: [],
    backendAllowed: [],
    forbidden: [],
    leaves: [],
  },
  {
    name: "event-gallery",
    src: "services/event-gallery/src",
    repository: isRepository,
    sqlAllowed: [
      {
        file: "favorites/service.ts",
        max: 1,
        reason: "a role lookup of the favourites service, to move into a repository",
      },
      {
        file: "feed/visibility.ts",
        max: 3,
        reason: "the visibility predicate as SQL expressions, which the feed and export repositories compose",
      },
    ],
    backendAllowed: [
      {
        file: "auth/auth.ts",
        max: 1,
        reason: "picks the session cache's recheck for several processes; to move behind the repository",
      },
      {
        file: "limits/limiter.ts",
        max: 1,
        reason: "picks the database-backed limiter on PostgreSQL (several processes share the limits)",
      },
      {
        file: "realtime/bus.ts",
        max: 1,
        reason: "LISTEN/NOTIFY reaches other processes only on PostgreSQL; to use the kit notifier alone",
      },
      {
        file: "settings/store.ts",
        max: 1,
        reason: "rechecks settings changed by another process only on PostgreSQL",
      },
    ],
    forbidden: [],
    leaves: [],
  },
  {
    name: "script-platform",
    src: "services/script-platform/src",
    repository: isRepository,
    sqlAllowed: [
      {
        file: "dispatch/group-commit.ts",
        max: 6,
        reason:
          "compiledPerRowCount/multiRowStatement compile and run statements built in the repo modules; name no table",
      },
    ],
    backendAllowed: [
      { file: "control/route-table.ts", max: 2, reason: "route changes reach other processes by NOTIFY" },
      { file: "dispatch/change-events.ts", max: 2, reason: "trigger events announce rows by NOTIFY" },
      { file: "dispatch/dispatcher.ts", max: 3, reason: "the dispatcher wakes other processes by NOTIFY" },
      {
        file: "dispatch/enqueue.ts",
        max: 3,
        reason: "outbox rows are announced by NOTIFY in their transaction",
      },
      {
        file: "dispatch/group-commit.ts",
        max: 1,
        reason: "PostgreSQL commits are not grouped the SQLite way",
      },
      { file: "realtime/hub.ts", max: 2, reason: "realtime messages travel by NOTIFY; SQLite reads its log" },
    ],
    // The capabilities import each other one way: dispatch/ below execution/, triggers/ the
    // trigger model, the SDK below dispatch/.
    forbidden: [
      ["dispatch", "execution"],
      ["triggers", "dispatch"],
      ["triggers", "execution"],
      ["sdk", "dispatch"],
    ],
    leaves: ["config.ts"],
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
    ].join("\n");
    expect(backendChecks(code).map((u) => u.line)).toEqual([1, 3]);
  });

  it("know the repositories", () => {
    expect(isRepository("control/apps-repo.ts")).toBe(true);
    expect(isRepository("triggers/repository.ts")).toBe(true);
    expect(isRepository("export/repo.ts")).toBe(true);
    expect(isRepository("auth/tickets-repository.ts")).toBe(true);
    expect(isRepository("db/migrations/0001_control_plane.ts")).toBe(true);
    expect(isRepository("http/routes/apps.ts")).toBe(false);
    expect(isRepository("control/repo-helpers.ts")).toBe(false);
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

  it("reads the imports it checks", () => {
    expect(files.length).toBeGreaterThan(5);
    expect([...fileGraph.values()].some((deps) => deps.size > 0)).toBe(true);
  });

  it("has no import cycle between files (beyond the known ones)", () => {
    expect(cycles(fileGraph).sort()).toEqual(pkg.knownCycles?.files ?? []);
  });

  it("has no import cycle between capabilities (folders; each top-level file on its own)", () => {
    expect(cycles(folders).sort()).toEqual(pkg.knownCycles?.folders ?? []);
    if (pkg.knownCycles) expect(pkg.knownCycles.reason.length).toBeGreaterThan(10);
  });

  it("imports between folders only the allowed way", () => {
    const wrong = pkg.forbidden.filter(([from, to]) => folders.get(from)?.has(to));
    expect(wrong).toEqual([]);
    for (const leaf of pkg.leaves) expect([...(folders.get(leaf) ?? [])], leaf).toEqual([]);
  });

  const check = (
    kind: string,
    uses: (code: string) => { line: number; text: string }[],
    allowed: Allowed[],
  ) => {
    const found = files
      .filter((rel) => !pkg.repository(rel))
      .map((rel) => ({ rel, uses: uses(text.get(rel) ?? "") }))
      .filter((f) => f.uses.length > 0);
    it(`has no ${kind} outside repositories (beyond the allow-list)`, () => {
      const offending = found.flatMap((f) => {
        const a = allowed.find((x) => x.file === f.rel);
        if (a && f.uses.length <= a.max) return [];
        return f.uses.map((u) => `${f.rel}:${u.line}: ${u.text}`);
      });
      expect(offending).toEqual([]);
    });
    it(`keeps the ${kind} allow-list honest (every entry still needed, each with a reason)`, () => {
      for (const a of allowed) {
        expect(a.reason.length, a.file).toBeGreaterThan(10);
        expect(
          found.some((f) => f.rel === a.file),
          `${a.file} holds no ${kind} any more: remove it from the allow-list`,
        ).toBe(true);
      }
    });
  };
  check("SQL", sqlUses, pkg.sqlAllowed);
  check("backend check", backendChecks, pkg.backendAllowed);

  it("strips comments without moving lines", () => {
    for (const [rel, t] of text)
      expect(withoutComments(t).split("\n").length, rel).toBe(t.split("\n").length);
  });
});
