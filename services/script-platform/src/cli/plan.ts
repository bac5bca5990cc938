import { createTwoFilesPatch } from "diff";
import type { ScriptView } from "./client.js";
import { CliError, EXIT } from "./errors.js";
import {
  type LocalScript,
  type Manifest,
  type RemoteApp,
  type RouteSpec,
  routeKey,
  routeSpec,
  type TriggerSpec,
  triggerKey,
  triggerSpec,
} from "./layout.js";

/** One API call of a push, with the line (and diff) the user sees before it runs. */
export type Step =
  | { op: "create-script"; summary: string; diff: string; kind: string; body: Record<string, unknown> }
  | {
      op: "update-script";
      summary: string;
      diff: string;
      kind: string;
      id: string;
      body: Record<string, unknown>;
    }
  | { op: "delete-route"; summary: string; id: string }
  | { op: "create-route"; summary: string; script: string; body: Record<string, unknown> }
  | { op: "delete-trigger"; summary: string; id: string }
  | { op: "patch-trigger"; summary: string; id: string; enabled: boolean }
  | { op: "create-trigger"; summary: string; script: string; kind: string; body: Record<string, unknown> };

/** Order that keeps every call valid: removals first, modules before the endpoints importing them. */
const ORDER: Record<Step["op"], number> = {
  "delete-route": 0,
  "delete-trigger": 0,
  "patch-trigger": 1,
  "create-script": 2,
  "update-script": 2,
  "create-route": 4,
  "create-trigger": 4,
};

export interface Plan {
  steps: Step[];
  /** Remote scripts with no file: push leaves them on the platform. */
  untouched: string[];
}

/**
 * What `push` must do so the platform holds the folder: a new version only for a script whose
 * source, language, kind or settings differ; routes of scripts whose manifest entry lists them and
 * the app's triggers (when the manifest lists them) made equal, by creating and deleting.
 */
export function planPush(local: LocalScript[], manifest: Manifest, remote: RemoteApp): Plan {
  const steps: Step[] = [];
  const byName = new Map(remote.scripts.map((s) => [s.name, s]));
  const localNames = new Set(local.map((s) => s.name));
  for (const l of local) {
    const spec = manifest.scripts[l.name];
    const r = byName.get(l.name);
    const settings: Record<string, unknown> = {};
    if (spec?.description !== undefined) settings.description = spec.description;
    if (spec?.timeout_seconds !== undefined) settings.timeout_seconds = spec.timeout_seconds;
    if (spec?.sandbox !== undefined) settings.sandbox = spec.sandbox;
    if (!r) {
      steps.push({
        op: "create-script",
        summary: `+ script ${l.name} (${l.kind}, ${l.language}) from ${l.file}`,
        diff: patch(l.file, "", l.source),
        kind: l.kind,
        body: { name: l.name, kind: l.kind, language: l.language, source: l.source, ...settings },
      });
      continue;
    }
    const body: Record<string, unknown> = {};
    const notes: string[] = [];
    if (r.source !== l.source) body.source = l.source;
    if ((r.language ?? "javascript") !== l.language) {
      body.language = l.language;
      body.source = l.source;
      notes.push(`language ${r.language ?? "javascript"} → ${l.language}`);
    }
    if (r.kind !== l.kind) {
      body.kind = l.kind;
      notes.push(`kind ${r.kind} → ${l.kind}`);
    }
    for (const [k, v] of Object.entries(settings)) {
      const was = remoteSetting(r, k);
      if (stable(was) !== stable(v)) {
        body[k] = v;
        notes.push(`${k} ${stable(was)} → ${stable(v)}`);
      }
    }
    if (Object.keys(body).length > 0) {
      const what = [body.source !== undefined ? "source" : null, ...notes].filter(Boolean).join(", ");
      // The platform counts a new version only for source, language or sandbox changes.
      const versioned =
        body.source !== undefined || body.language !== undefined || body.sandbox !== undefined;
      const version = versioned ? `v${r.version ?? "?"} → v${(r.version ?? 0) + 1}` : `v${r.version ?? "?"}`;
      steps.push({
        op: "update-script",
        summary: `~ script ${l.name} (${version}): ${what}`,
        diff: body.source !== undefined ? patch(l.file, r.source, l.source) : "",
        kind: l.kind,
        id: r.id,
        body,
      });
    }
  }
  for (const l of local) {
    const wanted = manifest.scripts[l.name]?.routes;
    if (!wanted || l.kind !== "endpoint") continue;
    const r = byName.get(l.name);
    const have = r ? (remote.routes.get(r.id) ?? []) : [];
    const haveKeys = new Map(have.map((h) => [routeKey(routeSpec(h)), h]));
    const wantKeys = new Map(wanted.map((w) => [routeKey(w), w]));
    for (const [k, h] of haveKeys)
      if (!wantKeys.has(k))
        steps.push({
          op: "delete-route",
          summary: `- route ${describeRoute(routeSpec(h))} → ${l.name}`,
          id: h.id,
        });
    for (const [k, w] of wantKeys)
      if (!haveKeys.has(k))
        steps.push({
          op: "create-route",
          summary: `+ route ${describeRoute(w)} → ${l.name}`,
          script: l.name,
          body: routeBody(w),
        });
  }
  if (manifest.triggers) {
    if (!remote.triggers)
      throw new CliError(
        "platform.json lists triggers, but these credentials may not manage them (app:admin).",
        EXIT.auth,
      );
    const names = new Map(remote.scripts.map((s) => [s.id, s.name]));
    const have = remote.triggers.map((t) => ({
      t,
      spec: triggerSpec(t, names.get(t.script_id) ?? t.script_id),
    }));
    const wantByKey = new Map<string, TriggerSpec>();
    for (const w of manifest.triggers) {
      if (!localNames.has(w.script) && !byName.has(w.script))
        throw new CliError(
          `platform.json: a ${w.kind} trigger targets script ${w.script}, which is neither here nor on the platform.`,
        );
      wantByKey.set(triggerKey(w), w);
    }
    const matched = new Set<string>();
    for (const { t, spec } of have) {
      const k = [triggerKey(spec), triggerKey(spec, false)].find(
        (key) => wantByKey.has(key) && !matched.has(key),
      );
      const w = k === undefined ? undefined : wantByKey.get(k);
      if (!w || k === undefined) {
        steps.push({ op: "delete-trigger", summary: `- trigger ${describeTrigger(spec)}`, id: t.id });
        continue;
      }
      matched.add(k);
      const enabled = w.enabled ?? true;
      if (enabled !== t.enabled)
        steps.push({
          op: "patch-trigger",
          summary: `~ trigger ${describeTrigger(spec)}: ${enabled ? "enabled" : "disabled"}`,
          id: t.id,
          enabled,
        });
    }
    for (const [k, w] of wantByKey)
      if (!matched.has(k))
        steps.push({
          op: "create-trigger",
          summary: `+ trigger ${describeTrigger(w)}`,
          script: w.script,
          kind: w.kind,
          body: triggerBody(w),
        });
  }
  steps.sort((a, b) => ORDER[a.op] - ORDER[b.op] || moduleFirst(a) - moduleFirst(b));
  return { steps, untouched: remote.scripts.filter((s) => !localNames.has(s.name)).map((s) => s.name) };
}

function moduleFirst(s: Step): number {
  return (s.op === "create-script" || s.op === "update-script") && s.kind !== "module" ? 1 : 0;
}

function remoteSetting(r: ScriptView, k: string): unknown {
  if (k === "description") return r.description ?? "";
  if (k === "timeout_seconds") return r.timeout_seconds ?? null;
  if (k === "sandbox") return r.sandbox ?? {};
  return undefined;
}

/** JSON with sorted keys, so `{a, b}` and `{b, a}` compare equal. */
function stable(v: unknown): string {
  return (
    JSON.stringify(v, (_k, x: unknown) =>
      x && typeof x === "object" && !Array.isArray(x)
        ? Object.fromEntries(
            Object.entries(x as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)),
          )
        : x,
    ) ?? "null"
  );
}

function patch(file: string, before: string, after: string): string {
  return createTwoFilesPatch(`platform/${file}`, `local/${file}`, before, after, "", "", { context: 3 })
    .split("\n")
    .slice(1) // the "====" line
    .join("\n");
}

function describeRoute(r: RouteSpec): string {
  const host = r.host_kind ? ` on ${r.host ?? r.host_kind}` : "";
  return `${r.method.toUpperCase()} ${r.path}${host}${r.dispatch_mode === "async" ? " (async)" : ""}`;
}

function routeBody(r: RouteSpec): Record<string, unknown> {
  return {
    path: r.path,
    method: r.method.toUpperCase(),
    ...(r.host_kind ? { host_kind: r.host_kind } : {}),
    ...(r.host ? { host: r.host } : {}),
    ...(r.dispatch_mode ? { dispatch_mode: r.dispatch_mode } : {}),
  };
}

function describeTrigger(t: TriggerSpec): string {
  const detail = t.collection ?? t.topic ?? (t.schedule ? `${t.schedule} ${t.timezone ?? ""}`.trim() : "");
  const ops = t.operations?.length ? ` [${t.operations.join(",")}]` : "";
  return `${t.kind}${detail ? ` ${detail}` : ""}${ops} → ${t.script}${t.enabled === false ? " (disabled)" : ""}`;
}

function triggerBody(t: TriggerSpec): Record<string, unknown> {
  const { kind: _k, script: _s, ...rest } = t;
  return rest;
}
