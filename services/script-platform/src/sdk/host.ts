import { CAPABILITY_SCOPES, type Capability, can } from "../control/scopes.js";
import { type HostCall, ScriptVisibleError } from "../sandbox/engine.js";
import { docsOps } from "./docs.js";
import { filesOps } from "./files.js";
import { kvOps } from "./kv.js";
import { pubsubOps } from "./pubsub.js";
import { secretsOps } from "./secrets.js";
import type { SdkCall, SdkDeps } from "./types.js";

type Op = (...args: unknown[]) => Promise<unknown>;

/** The capability each SDK call needs (seed: reads → script:read; writes, publish, http, secrets → script:write). */
const CAPABILITY_OF: Record<string, Capability> = {
  "kv.get": "kv.read",
  "kv.has": "kv.read",
  "kv.list": "kv.read",
  "kv.set": "kv.write",
  "kv.delete": "kv.write",
  "docs.get": "docs.read",
  "docs.list": "docs.read",
  "docs.create": "docs.write",
  "docs.replace": "docs.write",
  "docs.patch": "docs.write",
  "docs.delete": "docs.write",
  "files.head": "files.read",
  "files.get": "files.read",
  "files.list": "files.read",
  "files.create": "files.write",
  "files.update": "files.write",
  "files.delete": "files.write",
  "pubsub.publishDurable": "pubsub.publish",
  "pubsub.subscriberToken": "pubsub.publish",
  "secrets.get": "secrets",
  "secrets.set": "secrets",
  "secrets.delete": "secrets",
  "secrets.list": "secrets",
  "http.request": "http",
};

/** Longest single setTimeout delay; the run's own deadline (at most 300 s) usually ends it first. */
const MAX_SLEEP_MS = 300_000;

function sleep(deps: SdkDeps, ms: unknown, signal: AbortSignal): Promise<null> {
  const delay = typeof ms === "number" && Number.isFinite(ms) ? Math.min(Math.max(0, ms), MAX_SLEEP_MS) : 0;
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(null);
    const t = deps.clock.setTimeout(() => resolve(null), delay);
    signal.addEventListener("abort", () => {
      t.cancel();
      resolve(null);
    });
  });
}

function sdkGroups(deps: SdkDeps, call: SdkCall): Record<string, Record<string, Op>> {
  return {
    kv: kvOps(deps, call) as unknown as Record<string, Op>,
    docs: docsOps(deps, call) as unknown as Record<string, Op>,
    files: filesOps(deps, call) as unknown as Record<string, Op>,
    secrets: secretsOps(deps, call) as unknown as Record<string, Op>,
    pubsub: pubsubOps(deps, call) as unknown as Record<string, Op>,
  };
}

/**
 * The host side of every SDK call of one execution. The app id comes from `call` (the calling
 * context) and nothing a script passes can change it. With a principal present, each call first
 * checks the capability's scope on that app; public HTTP runs carry no principal.
 */
export function sdkHost(deps: SdkDeps, call: SdkCall): HostCall {
  // Built on the first SDK call: most runs of a hot route make none.
  let groups: Record<string, Record<string, Op>> | null = null;
  return async (op, args, signal) => {
    // setTimeout of the web APIs (sandbox/web-apis.ts): needs no capability; the run's deadline
    // ends it (the signal aborts with the run), and the calls-in-flight bound limits how many wait.
    if (op === "timer.sleep") return sleep(deps, args[0], signal);
    const capability = CAPABILITY_OF[op];
    if (!capability) throw new ScriptVisibleError(`Unknown SDK call: ${op.slice(0, 64)}.`);
    if (call.principal && !can(call.principal, capability, call.appId))
      throw new ScriptVisibleError(`${op}: permission denied (needs ${CAPABILITY_SCOPES[capability]}).`);
    if (op === "http.request") {
      const [method, url, body, opts] = args;
      return deps.http.request(String(method), url, body, opts, signal);
    }
    const [group, name] = op.split(".") as [string, string];
    groups ??= sdkGroups(deps, call);
    const fn = groups[group]?.[name];
    if (!fn) throw new ScriptVisibleError(`Unknown SDK call: ${op.slice(0, 64)}.`);
    return fn(...args);
  };
}
