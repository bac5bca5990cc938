import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { FakeClock } from "@app/kit/clock";
import { createTestDatabase } from "@app/kit/db/testing";
import { captureLogger } from "@app/kit/logger";
import type { Principal } from "../../src/control/scopes.js";
import { createSecretBox } from "../../src/crypto/secret-box.js";
import { migrations } from "../../src/db/migrations/index.js";
import type { PlatformDB } from "../../src/db/schema.js";
import { createDispatch } from "../../src/dispatch/dispatch.js";
import { createEngine, type RunOutcome } from "../../src/sandbox/engine.js";
import { resolveLimits, type SandboxKnobs } from "../../src/sandbox/limits.js";
import { sdkHost } from "../../src/sdk/host.js";
import { createOutboundHttp, type Resolver } from "../../src/sdk/http.js";
import type { SdkDeps } from "../../src/sdk/types.js";
import { DEFAULT_TRIGGER_SETTINGS } from "../../src/triggers/settings.js";

/** A migrated database plus SDK deps and a runner: engine + SDK without HTTP. */
export async function sdkHarness(opts: { allowPrivate?: boolean; resolver?: Resolver } = {}) {
  const { database, env, cleanup } = await createTestDatabase<PlatformDB>(migrations);
  const clock = new FakeClock();
  const logger = captureLogger().logger;
  const dispatch = createDispatch({
    database,
    clock,
    logger,
    settings: DEFAULT_TRIGGER_SETTINGS,
    wake: () => {},
  });
  const http = createOutboundHttp({
    allowPrivate: opts.allowPrivate ?? false,
    ...(opts.resolver ? { resolver: opts.resolver } : {}),
  });
  const deps: SdkDeps = {
    database,
    clock,
    logger,
    secretBox: createSecretBox(randomBytes(32)),
    filesRoot: join(env.dataDir, "files"),
    secretMaxBytes: 65_536,
    http,
    events: dispatch.events,
  };
  const engine = createEngine({ clock, logger });
  const run = (
    appId: string,
    source: string,
    o: { principal?: Principal | null; sandbox?: Partial<SandboxKnobs>; ctx?: unknown } = {},
  ): Promise<RunOutcome> =>
    engine.run({
      name: "main",
      source,
      modules: new Map(),
      ctx: o.ctx ?? {},
      limits: resolveLimits(o.sandbox ?? {}, 30),
      host: sdkHost(deps, {
        appId,
        scriptId: "s",
        executionId: "e",
        principal: o.principal ?? null,
        depth: 0,
      }),
    });
  /** Run and return the value, failing loudly with the error text otherwise. */
  const value = async (appId: string, source: string, o: Parameters<typeof run>[2] = {}) => {
    const r = await run(appId, source, o);
    if (!r.ok) throw new Error(`${r.kind}: ${r.message}`);
    return r.value;
  };
  return {
    database,
    deps,
    clock,
    run,
    value,
    async cleanup() {
      await http.close();
      await cleanup();
    },
  };
}

export function principalWith(appId: string, role: "viewer" | "editor"): Principal {
  return {
    kind: "admin",
    id: "p",
    adminId: "p",
    username: "u",
    instanceRole: "member",
    scopes: new Set(),
    appRoles: new Map([[appId, role]]),
    appId: null,
    keyScopes: null,
    sessionId: null,
  };
}
