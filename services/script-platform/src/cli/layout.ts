import type { RouteView, ScriptView, TriggerDetail, TriggerView } from "./client.js";
import { CliError } from "./errors.js";

/**
 * The on-disk form of an app (contract, "Concurrency, fairness and the CLI"): one file per script,
 * `<name>.ts` or `<name>.js` (modules under `modules/`), plus `platform.json` with what is not
 * source. Pure: no I/O, so pull and push plans are tested without a platform.
 */
export const MANIFEST = "platform.json";
export const MODULES_DIR = "modules";

export interface RouteSpec {
  method: string;
  path: string;
  host_kind?: "strict" | "wildcard";
  host?: string;
  dispatch_mode?: "async";
}
export interface ScriptSpec {
  kind: "endpoint" | "module";
  language: "javascript" | "typescript";
  description?: string;
  timeout_seconds?: number;
  sandbox?: Record<string, unknown>;
  /** Absent: push leaves the script's routes alone. */
  routes?: RouteSpec[];
}
export interface TriggerSpec extends TriggerDetail {
  kind: string;
  /** The target script's name. */
  script: string;
  enabled?: boolean;
  /** Email only; never pulled (the platform does not reveal it). */
  inbound_secret?: string;
}
export interface Manifest {
  app: string;
  scripts: Record<string, ScriptSpec>;
  /** Absent: push leaves the app's triggers alone. */
  triggers?: TriggerSpec[];
}

/** A script as the folder holds it. */
export interface LocalScript {
  name: string;
  file: string;
  kind: "endpoint" | "module";
  language: "javascript" | "typescript";
  source: string;
}

/** What the platform holds for one app. */
export interface RemoteApp {
  slug: string;
  scripts: ScriptView[];
  routes: Map<string, RouteView[]>;
  /** null: the caller may not read triggers (app:admin). */
  triggers: TriggerView[] | null;
}

export function fileOf(name: string, kind: "endpoint" | "module", language: string): string {
  const ext = language === "typescript" ? ".ts" : ".js";
  return kind === "module" ? `${MODULES_DIR}/${name}${ext}` : `${name}${ext}`;
}

/** A route as written in a manifest: defaults left out, a prefix route as `/path/*`. */
export function routeSpec(r: RouteView): RouteSpec {
  const path = r.path_kind === "prefix" ? `${r.path.replace(/\/$/, "")}/*` : r.path;
  return {
    method: r.method,
    path,
    ...(r.host_kind !== "any" ? { host_kind: r.host_kind } : {}),
    ...(r.host_kind !== "any" && r.host ? { host: r.host } : {}),
    ...(r.dispatch_mode === "async" ? { dispatch_mode: "async" as const } : {}),
  };
}

export function routeKey(r: RouteSpec): string {
  return [r.method.toUpperCase(), r.host_kind ?? "any", r.host ?? "", r.path, r.dispatch_mode ?? "sync"].join(
    " ",
  );
}

export function triggerSpec(t: TriggerView, scriptName: string): TriggerSpec {
  const spec: TriggerSpec = { kind: t.kind, script: scriptName, enabled: t.enabled };
  if (t.retry) spec.retry = t.retry;
  if (t.collection !== undefined) spec.collection = t.collection;
  if (t.operations !== undefined) spec.operations = t.operations;
  if (t.topic !== undefined) spec.topic = t.topic;
  if (t.schedule !== undefined) spec.schedule = t.schedule;
  if (t.timezone !== undefined) spec.timezone = t.timezone;
  return spec;
}

/**
 * What makes two triggers the same one (`enabled` is changed in place, the secret is write-only).
 * `retry` counts only when the manifest states it: the platform reports the effective policy.
 */
export function triggerKey(t: TriggerSpec, withRetry = Boolean(t.retry)): string {
  return JSON.stringify([
    t.kind,
    t.script,
    t.collection ?? null,
    [...(t.operations ?? [])].sort(),
    t.topic ?? null,
    t.schedule ?? null,
    t.timezone ?? null,
    withRetry && t.retry ? [t.retry.max_attempts, t.retry.backoff_ms, t.retry.max_backoff_ms] : null,
  ]);
}

/** The files `pull` writes (path relative to the folder → content). */
export function toFiles(app: RemoteApp): Map<string, string> {
  const files = new Map<string, string>();
  const names = new Map(app.scripts.map((s) => [s.id, s.name]));
  const manifest: Manifest = { app: app.slug, scripts: {} };
  for (const s of [...app.scripts].sort((a, b) => a.name.localeCompare(b.name))) {
    const language = s.language ?? "javascript";
    files.set(fileOf(s.name, s.kind, language), s.source);
    const spec: ScriptSpec = { kind: s.kind, language };
    if (s.description) spec.description = s.description;
    if (s.timeout_seconds !== null && s.timeout_seconds !== undefined)
      spec.timeout_seconds = s.timeout_seconds;
    spec.sandbox = s.sandbox ?? {};
    if (s.kind === "endpoint") spec.routes = (app.routes.get(s.id) ?? []).map(routeSpec);
    manifest.scripts[s.name] = spec;
  }
  if (app.triggers)
    manifest.triggers = app.triggers.map((t) => triggerSpec(t, names.get(t.script_id) ?? t.script_id));
  files.set(MANIFEST, `${JSON.stringify(manifest, null, 2)}\n`);
  return files;
}

/** Parses and checks `platform.json`; errors name the field. */
export function parseManifest(text: string): Manifest {
  let j: unknown;
  try {
    j = JSON.parse(text);
  } catch (err) {
    throw new CliError(`${MANIFEST} is not valid JSON: ${(err as Error).message}`);
  }
  const bad = (what: string) => new CliError(`${MANIFEST}: ${what}`);
  if (!isObject(j)) throw bad("expected an object");
  if (typeof j.app !== "string") throw bad('"app" must be the app\'s slug');
  const scripts = j.scripts ?? {};
  if (!isObject(scripts)) throw bad('"scripts" must be an object keyed by script name');
  for (const [name, s] of Object.entries(scripts)) {
    if (!isObject(s)) throw bad(`scripts.${name} must be an object`);
    if (s.kind !== undefined && s.kind !== "endpoint" && s.kind !== "module")
      throw bad(`scripts.${name}.kind must be "endpoint" or "module"`);
    if (s.routes !== undefined) {
      if (!Array.isArray(s.routes)) throw bad(`scripts.${name}.routes must be a list`);
      s.routes.forEach((r, i) => {
        if (!isObject(r) || typeof r.path !== "string")
          throw bad(`scripts.${name}.routes[${i}] needs a "path"`);
        if (r.method === undefined) r.method = "ANY";
        if (typeof r.method !== "string") throw bad(`scripts.${name}.routes[${i}].method must be a string`);
      });
    }
  }
  if (j.triggers !== undefined) {
    if (!Array.isArray(j.triggers)) throw bad('"triggers" must be a list');
    j.triggers.forEach((t, i) => {
      if (!isObject(t) || typeof t.kind !== "string" || typeof t.script !== "string")
        throw bad(`triggers[${i}] needs "kind" and "script" (the target script's name)`);
    });
  }
  return j as unknown as Manifest;
}

/**
 * Scripts from the folder's file list: top-level `*.js|*.ts` are endpoints, `modules/*` modules.
 * A name with both a .js and a .ts file is an error (which one would be pushed?).
 */
export function localScripts(
  files: Map<string, string>,
  manifest: Manifest,
): { scripts: LocalScript[]; problems: string[] } {
  const scripts = new Map<string, LocalScript>();
  const problems: string[] = [];
  for (const [file, source] of files) {
    const m = /^(?:(modules)\/)?([^/]+)\.(js|ts)$/.exec(file);
    if (!m?.[2]) continue;
    const name = m[2];
    const kind = m[1] ? "module" : "endpoint";
    const language = m[3] === "ts" ? "typescript" : "javascript";
    const seen = scripts.get(name);
    if (seen) {
      problems.push(`${seen.file} and ${file} are both script ${name}: keep one.`);
      continue;
    }
    const declared = manifest.scripts[name]?.kind;
    if (declared && declared !== kind)
      problems.push(
        `${file}: ${MANIFEST} says ${name} is a ${declared}; ${declared === "module" ? `move it under ${MODULES_DIR}/` : `move it out of ${MODULES_DIR}/`} or change its kind.`,
      );
    scripts.set(name, { name, file, kind, language, source });
  }
  return { scripts: [...scripts.values()].sort((a, b) => a.name.localeCompare(b.name)), problems };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
