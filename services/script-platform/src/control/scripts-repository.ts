import { type Database, type Dialect, type Kysely, preparedQuery, type Selectable } from "@app/kit/db";
import { isUuid } from "@app/kit/ids";
import type { PlatformDB } from "../db/schema.js";
import type { SandboxOverrides } from "./sandbox-policy.js";
import type { ScriptLanguage } from "./script-language.js";

/** Read on every user-route request and every run: compiled once per database, then prepared. */
const scriptByIdStatement = preparedQuery((db: Kysely<PlatformDB>, p: { id: string }) =>
  db.selectFrom("scripts").selectAll().where("id", "=", p.id),
);

export type ScriptKind = "endpoint" | "module";

export interface ScriptRecord {
  id: string;
  app_id: string;
  name: string;
  kind: ScriptKind;
  source: string;
  description: string;
  timeout_seconds: number;
  sandbox: SandboxOverrides;
  memory_limit_mb: number | null;
  created_at: string;
  updated_at: string;
  language: ScriptLanguage;
  /** The author's TypeScript; `source` is then its type-stripped JavaScript (what runs). Null for JavaScript. */
  authored_source: string | null;
  version: number;
}

/** One saved version: the author's source as it was. */
export interface ScriptVersionRecord {
  script_id: string;
  version: number;
  language: ScriptLanguage;
  source: string;
  sandbox: SandboxOverrides;
  created_by: string | null;
  created_at: string;
}

type Db = Kysely<PlatformDB>;

/** A scripts row as read (any query that selects every column of the table) as a record. */
export function scriptRecordOf(d: Dialect, r: Selectable<PlatformDB["scripts"]>): ScriptRecord {
  return {
    ...r,
    kind: r.kind as ScriptKind,
    language: r.language as ScriptLanguage,
    version: Number(r.version),
    sandbox: d.fromJson<SandboxOverrides>(r.sandbox) ?? {},
    created_at: d.fromTimestamp(r.created_at),
    updated_at: d.fromTimestamp(r.updated_at),
  };
}

/** SQL for scripts and their import graph. */
export function scriptsRepo(database: Database<PlatformDB>) {
  const d = database.dialect;
  const toRecord = (r: Selectable<PlatformDB["scripts"]>): ScriptRecord => scriptRecordOf(d, r);
  const toVersion = (r: PlatformDB["script_versions"]): ScriptVersionRecord => ({
    ...r,
    version: Number(r.version),
    language: r.language as ScriptLanguage,
    sandbox: d.fromJson<SandboxOverrides>(r.sandbox) ?? {},
    created_at: d.fromTimestamp(r.created_at),
  });
  return {
    async byId(id: string, db: Db = database.db): Promise<ScriptRecord | null> {
      if (!isUuid(id)) return null;
      const [r] = await scriptByIdStatement(db, { id });
      return r ? toRecord(r) : null;
    },
    /** The dispatcher reads the scripts of a whole claim at once (one statement, not one per run). */
    async byIds(ids: readonly string[], db: Db = database.db): Promise<ScriptRecord[]> {
      const valid = [...new Set(ids)].filter(isUuid);
      if (valid.length === 0) return [];
      return (await db.selectFrom("scripts").selectAll().where("id", "in", valid).execute()).map(toRecord);
    },
    async byName(appId: string, name: string, db: Db = database.db): Promise<ScriptRecord | null> {
      const r = await db
        .selectFrom("scripts")
        .selectAll()
        .where("app_id", "=", appId)
        .where("name", "=", name)
        .executeTakeFirst();
      return r ? toRecord(r) : null;
    },
    async list(opts: {
      appIds?: readonly string[] | null;
      after?: string | null;
      limit: number;
    }): Promise<ScriptRecord[]> {
      let q = database.db.selectFrom("scripts").selectAll().orderBy("id").limit(opts.limit);
      if (opts.after) q = q.where("id", ">", opts.after);
      if (opts.appIds) {
        if (opts.appIds.length === 0) return [];
        q = q.where("app_id", "in", [...opts.appIds]);
      }
      return (await q.execute()).map(toRecord);
    },
    async insert(db: Db, s: ScriptRecord): Promise<void> {
      await db
        .insertInto("scripts")
        .values({ ...s, sandbox: d.json(s.sandbox) })
        .execute();
    },
    async update(db: Db, s: ScriptRecord): Promise<void> {
      const { id, app_id: _a, created_at: _c, ...rest } = s;
      await db
        .updateTable("scripts")
        .set({ ...rest, sandbox: d.json(s.sandbox) })
        .where("id", "=", id)
        .execute();
    },
    async insertVersion(db: Db, v: ScriptVersionRecord): Promise<void> {
      await db
        .insertInto("script_versions")
        .values({ ...v, sandbox: d.json(v.sandbox) })
        .execute();
    },
    /** Newest first; `before` is the exclusive upper version bound (the cursor). */
    async versions(
      scriptId: string,
      opts: { before?: number | null; limit: number },
    ): Promise<ScriptVersionRecord[]> {
      let q = database.db
        .selectFrom("script_versions")
        .selectAll()
        .where("script_id", "=", scriptId)
        .orderBy("version", "desc")
        .limit(opts.limit);
      if (opts.before != null) q = q.where("version", "<", opts.before);
      return (await q.execute()).map(toVersion);
    },
    async version(scriptId: string, version: number): Promise<ScriptVersionRecord | null> {
      const r = await database.db
        .selectFrom("script_versions")
        .selectAll()
        .where("script_id", "=", scriptId)
        .where("version", "=", version)
        .executeTakeFirst();
      return r ? toVersion(r) : null;
    },
    async delete(db: Db, id: string): Promise<boolean> {
      const r = await db.deleteFrom("scripts").where("id", "=", id).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    },
    /** Module name → {id, kind} of one app's scripts, for resolving imports inside a write transaction. */
    async kindsByName(db: Db, appId: string): Promise<Map<string, { id: string; kind: ScriptKind }>> {
      const rows = await db
        .selectFrom("scripts")
        .select(["id", "name", "kind"])
        .where("app_id", "=", appId)
        .execute();
      return new Map(rows.map((r) => [r.name, { id: r.id, kind: r.kind as ScriptKind }]));
    },
    /** The app's import edges: script id → imported script ids. */
    async importEdges(db: Db, appId: string): Promise<Map<string, string[]>> {
      const rows = await db
        .selectFrom("script_imports")
        .select(["script_id", "imported_script_id"])
        .where("app_id", "=", appId)
        .execute();
      const out = new Map<string, string[]>();
      for (const r of rows) out.set(r.script_id, [...(out.get(r.script_id) ?? []), r.imported_script_id]);
      return out;
    },
    async importsOf(scriptId: string, db: Db = database.db): Promise<string[]> {
      const rows = await db
        .selectFrom("script_imports")
        .select("imported_name")
        .where("script_id", "=", scriptId)
        .orderBy("imported_name")
        .execute();
      return rows.map((r) => r.imported_name);
    },
    async importers(db: Db, scriptId: string): Promise<string[]> {
      const rows = await db
        .selectFrom("script_imports")
        .innerJoin("scripts", "scripts.id", "script_imports.script_id")
        .select("scripts.name")
        .where("script_imports.imported_script_id", "=", scriptId)
        .orderBy("scripts.name")
        .execute();
      return rows.map((r) => r.name);
    },
    async replaceImports(
      db: Db,
      scriptId: string,
      appId: string,
      imports: { name: string; id: string }[],
    ): Promise<void> {
      await db.deleteFrom("script_imports").where("script_id", "=", scriptId).execute();
      if (imports.length === 0) return;
      await db
        .insertInto("script_imports")
        .values(
          imports.map((i) => ({
            script_id: scriptId,
            app_id: appId,
            imported_name: i.name,
            imported_script_id: i.id,
          })),
        )
        .execute();
    },
    async countInApp(db: Db, appId: string): Promise<number> {
      const r = await db
        .selectFrom("scripts")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("app_id", "=", appId)
        .executeTakeFirst();
      return Number(r?.n ?? 0);
    },
    /** Triggers live in 0003 (no foreign key to scripts); count and delete them through here. */
    async triggerCount(db: Db, scriptId: string): Promise<number> {
      const r = await db
        .selectFrom("triggers")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("script_id", "=", scriptId)
        .executeTakeFirst();
      return Number(r?.n ?? 0);
    },
    async deleteTriggers(db: Db, scriptId: string): Promise<void> {
      await db.deleteFrom("triggers").where("script_id", "=", scriptId).execute();
    },
    async routeCount(db: Db, scriptId: string): Promise<number> {
      const r = await db
        .selectFrom("routes")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("script_id", "=", scriptId)
        .executeTakeFirst();
      return Number(r?.n ?? 0);
    },
    /**
     * Every module an entry script may import, transitively, by name → source (what the sandbox
     * loads). Reads the stored graph, so it matches what was validated at save time.
     */
    async modulesFor(script: { id: string }): Promise<Map<string, string>> {
      const out = new Map<string, string>();
      let frontier = [script.id];
      const seen = new Set(frontier);
      while (frontier.length > 0) {
        const rows = await database.db
          .selectFrom("script_imports")
          .innerJoin("scripts", "scripts.id", "script_imports.imported_script_id")
          .select(["scripts.id", "scripts.name", "scripts.source"])
          .where("script_imports.script_id", "in", frontier)
          .execute();
        frontier = [];
        for (const r of rows) {
          if (seen.has(r.id)) continue;
          seen.add(r.id);
          out.set(r.name, r.source);
          frontier.push(r.id);
        }
      }
      return out;
    },
  };
}
export type ScriptsRepo = ReturnType<typeof scriptsRepo>;
