import { createHash } from "node:crypto";
import type { Clock } from "@app/kit/clock";
import type { Database, Kysely } from "@app/kit/db";
import { AppError, conflict, notFound } from "@app/kit/errors";
import { newId } from "@app/kit/ids";
import type { PlatformDB } from "../db/schema.js";
import { appNotFound } from "./apps.js";
import { appsRepo } from "./apps-repository.js";
import {
  DEFAULT_TIMEOUT_S,
  type SandboxOverrides,
  type SandboxPolicy,
  TIMEOUT_CEILING_S,
} from "./sandbox-policy.js";
import type { Principal } from "./scopes.js";
import { type ScriptLanguage, toRunnable } from "./script-language.js";
import { analyzeSource, SCRIPT_NAME_RE, type ScriptKind, type SourceImport } from "./script-validation.js";
import {
  type ScriptRecord,
  type ScriptsRepo,
  type ScriptVersionRecord,
  scriptsRepo,
} from "./scripts-repository.js";

/** Seed: "depth limit 8" for module imports. */
export const MAX_IMPORT_DEPTH = 8;

/** Scripts per app. */
export const MAX_SCRIPTS_PER_APP = 10_000;

export const scriptNotFound = () => notFound("No such script.", "script_not_found");

export interface ScriptInput {
  name?: string | undefined;
  kind?: ScriptKind | undefined;
  source?: string | undefined;
  description?: string | undefined;
  timeout_seconds?: number | undefined;
  sandbox?: unknown;
  memory_limit_mb?: number | null | undefined;
  language?: ScriptLanguage | undefined;
}

/** Who saved: stored with each version (a username, or `api_key:<id>`). */
export type SavedBy = string | null;
export const savedBy = (p: Pick<Principal, "kind" | "id" | "username">): SavedBy =>
  p.kind === "api_key" ? `api_key:${p.id}` : p.username;

/** A script as the API shows it: `source` is the author's text (TypeScript stays TypeScript). */
export interface ScriptView extends Omit<ScriptRecord, "authored_source"> {
  /** Names of the module scripts this one imports (the stored dependency graph). */
  imports: string[];
}

export interface ScriptsDeps {
  database: Database<PlatformDB>;
  clock: Clock;
  sandbox: SandboxPolicy;
  /**
   * After a commit that changed what routes serve (a script saved or deleted): refresh the route
   * table everywhere (it carries the routed scripts).
   */
  onRoutesChanged: (appId: string) => Promise<void>;
}

type Db = Kysely<PlatformDB>;

function checkName(name: string): void {
  if (!SCRIPT_NAME_RE.test(name))
    throw new AppError(
      422,
      "validation_failed",
      "name must be 1 to 100 letters, digits, _, - or . and may not start with . or -.",
      { field: "name" },
    );
}

function checkTimeout(t: number): void {
  if (!Number.isInteger(t) || t < 1)
    throw new AppError(422, "validation_failed", "timeout_seconds must be a positive integer.", {
      field: "timeout_seconds",
    });
  if (t > TIMEOUT_CEILING_S)
    throw new AppError(
      422,
      "above_ceiling",
      `timeout_seconds = ${t} is above the platform ceiling of ${TIMEOUT_CEILING_S}.`,
      { field: "timeout_seconds", value: t, ceiling: TIMEOUT_CEILING_S },
    );
}

function importFailure(code: string, message: string, chain: string[], line?: number): AppError {
  return new AppError(422, code, message, { field: "source", chain, ...(line ? { line } : {}) });
}

/**
 * Resolve a script's imports against its app inside the write transaction: every name must be a
 * module script of the same app; the graph (with this script's new edges) must stay acyclic and
 * no chain may be longer than MAX_IMPORT_DEPTH. Errors name the chain.
 */
async function resolveImports(
  repo: ScriptsRepo,
  trx: Db,
  self: { id: string; app_id: string; name: string },
  imports: readonly SourceImport[],
): Promise<{ name: string; id: string }[]> {
  const byName = await repo.kindsByName(trx, self.app_id);
  const resolved: { name: string; id: string }[] = [];
  for (const imp of imports) {
    if (imp.name === self.name)
      throw importFailure(
        "import_cycle",
        `Line ${imp.line}: ${self.name} imports itself.`,
        [self.name, self.name],
        imp.line,
      );
    const target = byName.get(imp.name);
    if (!target)
      throw importFailure(
        "import_not_found",
        `Line ${imp.line}: no module script named ${JSON.stringify(imp.name)} in this app (${self.name} → ${imp.name}).`,
        [self.name, imp.name],
        imp.line,
      );
    if (target.kind !== "module")
      throw importFailure(
        "import_not_module",
        `Line ${imp.line}: ${imp.name} is an endpoint script; only module scripts can be imported (${self.name} → ${imp.name}).`,
        [self.name, imp.name],
        imp.line,
      );
    resolved.push({ name: imp.name, id: target.id });
  }
  const names = new Map<string, string>([...byName].map(([n, v]) => [v.id, n]));
  names.set(self.id, self.name);
  const edges = await repo.importEdges(trx, self.app_id);
  edges.set(
    self.id,
    resolved.map((r) => r.id),
  );
  // Longest chain downward from each node; a node on the current path again is a cycle.
  const longest = new Map<string, string[]>();
  const onPath: string[] = [];
  const visit = (id: string): string[] => {
    const known = longest.get(id);
    if (known) return known;
    const at = onPath.indexOf(id);
    if (at >= 0) {
      const chain = [...onPath.slice(at), id].map((x) => names.get(x) ?? x);
      throw importFailure("import_cycle", `Import cycle: ${chain.join(" → ")}.`, chain);
    }
    onPath.push(id);
    let best: string[] = [];
    for (const next of edges.get(id) ?? []) {
      const sub = visit(next);
      if (sub.length > best.length) best = sub;
    }
    onPath.pop();
    const chain = [id, ...best];
    longest.set(id, chain);
    return chain;
  };
  // Only chains through this script can have changed: its own and those of scripts reaching it.
  for (const id of [self.id, ...edges.keys()]) {
    const chain = visit(id);
    if (chain.length - 1 > MAX_IMPORT_DEPTH && chain.includes(self.id)) {
      const named = chain.map((x) => names.get(x) ?? x);
      throw importFailure(
        "import_too_deep",
        `Import chain deeper than ${MAX_IMPORT_DEPTH}: ${named.join(" → ")}.`,
        named,
      );
    }
  }
  return resolved;
}

function versionSummary(v: ScriptVersionRecord) {
  return {
    version: v.version,
    created_at: v.created_at,
    created_by: v.created_by,
    language: v.language,
    size: Buffer.byteLength(v.source, "utf8"),
    sha256: createHash("sha256").update(v.source, "utf8").digest("hex"),
  };
}

/** Scripts: save-time validation, the dependency graph, kind and name rules. */
export function createScripts(deps: ScriptsDeps) {
  const { database, clock, sandbox } = deps;
  const repo = scriptsRepo(database);
  const apps = appsRepo(database);

  const view = async (s: ScriptRecord, db: Db = database.db): Promise<ScriptView> => {
    const { authored_source, ...rest } = s;
    return { ...rest, source: authored_source ?? s.source, imports: await repo.importsOf(s.id, db) };
  };

  /** Strip types (TypeScript) and run the save-time checks on what will run. */
  const prepare = (
    authored: string,
    language: ScriptLanguage,
    kind: ScriptKind,
    overrides: SandboxOverrides,
  ) => {
    const runnable = toRunnable(authored, language);
    const analysis = analyzeSource(runnable, kind, sandbox.effective(overrides).max_expr_depth);
    return { runnable, analysis, authored_source: language === "typescript" ? authored : null };
  };

  const versionOf = (s: ScriptRecord, by: SavedBy): ScriptVersionRecord => ({
    script_id: s.id,
    version: s.version,
    language: s.language,
    source: s.authored_source ?? s.source,
    sandbox: s.sandbox,
    created_by: by,
    created_at: s.updated_at,
  });

  const duplicate = (name: string) =>
    conflict("duplicate_name", `A script named ${name} already exists in this app.`, { field: "name" });

  return {
    repo,
    view,

    async create(
      appId: string,
      input: ScriptInput & { name: string; kind: ScriptKind; source: string },
      by: SavedBy = null,
    ): Promise<ScriptView> {
      checkName(input.name);
      const timeout = input.timeout_seconds ?? DEFAULT_TIMEOUT_S;
      checkTimeout(timeout);
      const overrides: SandboxOverrides = sandbox.validate(input.sandbox);
      const language = input.language ?? "javascript";
      const { runnable, analysis, authored_source } = prepare(input.source, language, input.kind, overrides);
      const now = clock.iso();
      const record: ScriptRecord = {
        id: newId(),
        app_id: appId,
        name: input.name,
        kind: input.kind,
        source: runnable,
        language,
        authored_source,
        version: 1,
        description: input.description ?? "",
        timeout_seconds: timeout,
        sandbox: overrides,
        memory_limit_mb: input.memory_limit_mb ?? null,
        created_at: now,
        updated_at: now,
      };
      try {
        await database.writeTx(async (trx) => {
          // One writer per app at a time: the import graph and name checks see every commit before them.
          if (!(await apps.lock(trx, appId))) throw appNotFound();
          if ((await repo.countInApp(trx, appId)) >= MAX_SCRIPTS_PER_APP)
            throw conflict("limit_reached", `An app may hold at most ${MAX_SCRIPTS_PER_APP} scripts.`, {
              limit: MAX_SCRIPTS_PER_APP,
            });
          if (await repo.byName(appId, input.name, trx)) throw duplicate(input.name);
          const imports = await resolveImports(repo, trx, record, analysis.imports);
          await repo.insert(trx, record);
          await repo.insertVersion(trx, versionOf(record, by));
          await repo.replaceImports(trx, record.id, appId, imports);
        });
      } catch (err) {
        if (database.dialect.isUniqueViolation(err)) throw duplicate(input.name);
        throw err;
      }
      return view(record);
    },

    async update(
      id: string,
      input: ScriptInput,
      by: SavedBy = null,
      opts: { newVersion?: boolean } = {},
    ): Promise<ScriptView> {
      const current = await repo.byId(id);
      if (!current) throw scriptNotFound();
      if (input.name !== undefined) checkName(input.name);
      if (input.timeout_seconds !== undefined) checkTimeout(input.timeout_seconds);
      const overrides = input.sandbox !== undefined ? sandbox.validate(input.sandbox) : current.sandbox;
      const language = input.language ?? current.language;
      const kind = input.kind ?? current.kind;
      const authored = input.source ?? current.authored_source ?? current.source;
      const { runnable, analysis, authored_source } = prepare(authored, language, kind, overrides);
      const next: ScriptRecord = {
        ...current,
        name: input.name ?? current.name,
        kind,
        source: runnable,
        language,
        authored_source,
        description: input.description ?? current.description,
        timeout_seconds: input.timeout_seconds ?? current.timeout_seconds,
        sandbox: overrides,
        memory_limit_mb:
          input.memory_limit_mb === undefined ? current.memory_limit_mb : input.memory_limit_mb,
        updated_at: clock.iso(),
      };
      try {
        await database.writeTx(async (trx) => {
          await apps.lock(trx, current.app_id);
          const fresh = await repo.byId(id, trx);
          if (!fresh) throw scriptNotFound();
          if (next.kind === "module" && fresh.kind === "endpoint") {
            const routes = await repo.routeCount(trx, id);
            const triggers = await repo.triggerCount(trx, id);
            if (routes > 0 || triggers > 0)
              throw conflict(
                "in_use",
                `This endpoint has ${routes} route(s) and ${triggers} trigger(s); remove them before making it a module.`,
                { routes, triggers },
              );
          }
          if ((next.kind === "endpoint" && fresh.kind === "module") || next.name !== fresh.name) {
            const importers = await repo.importers(trx, id);
            if (importers.length > 0)
              throw conflict(
                "in_use",
                `Scripts import this module by name (${importers.join(", ")}); its name and kind cannot change.`,
                { importers },
              );
          }
          if (next.name !== fresh.name && (await repo.byName(fresh.app_id, next.name, trx)))
            throw duplicate(next.name);
          const imports = await resolveImports(repo, trx, next, analysis.imports);
          // A new version when what runs could differ: the source, its language or the sandbox.
          const changed =
            opts.newVersion === true ||
            authored !== (fresh.authored_source ?? fresh.source) ||
            language !== fresh.language ||
            JSON.stringify(overrides) !== JSON.stringify(fresh.sandbox);
          next.version = changed ? fresh.version + 1 : fresh.version;
          await repo.update(trx, next);
          if (changed) await repo.insertVersion(trx, versionOf(next, by));
          await repo.replaceImports(trx, id, next.app_id, imports);
        });
      } catch (err) {
        if (database.dialect.isUniqueViolation(err)) throw duplicate(next.name);
        throw err;
      }
      await deps.onRoutesChanged(next.app_id);
      return view(next);
    },

    /** Saved versions, newest first (`before`: the cursor, an exclusive version bound). */
    async versions(id: string, page: { before: number | null; limit: number }) {
      const rows = await repo.versions(id, { before: page.before, limit: page.limit });
      return rows.map(versionSummary);
    },

    async version(id: string, n: number) {
      const v = Number.isSafeInteger(n) && n > 0 ? await repo.version(id, n) : null;
      if (!v) throw notFound(`Version ${n} of this script does not exist.`, "version_not_found");
      return { ...versionSummary(v), source: v.source, sandbox: v.sandbox };
    },

    /** A restore is a new save of version n's source, language and sandbox: history only grows. */
    async restore(id: string, n: number, by: SavedBy = null): Promise<ScriptView> {
      const v = await this.version(id, n);
      return this.update(id, { source: v.source, language: v.language, sandbox: v.sandbox }, by, {
        newVersion: true,
      });
    },

    async remove(id: string): Promise<void> {
      const appId = await database.writeTx(async (trx) => {
        const s = await repo.byId(id, trx);
        if (!s) throw scriptNotFound();
        await apps.lock(trx, s.app_id);
        const importers = await repo.importers(trx, id);
        if (importers.length > 0)
          throw conflict(
            "in_use",
            `Scripts import this module (${importers.join(", ")}); change them first.`,
            {
              importers,
            },
          );
        await repo.deleteTriggers(trx, id);
        await repo.delete(trx, id);
        return s.app_id;
      });
      await deps.onRoutesChanged(appId);
    },
  };
}
export type Scripts = ReturnType<typeof createScripts>;
