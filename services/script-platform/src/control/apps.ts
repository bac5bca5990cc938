import { rm } from "node:fs/promises";
import { join } from "node:path";
import type { Clock } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { AppError, conflict, notFound } from "@app/kit/errors";
import { newId } from "@app/kit/ids";
import type { PlatformDB } from "../db/schema.js";
import { type AppRow, type AppsRepo, appsRepo, type DomainRow } from "./apps-repository.js";
import { normalizeHost, validHostName, wildcardSuffix } from "./route-patterns.js";

/** Slugs: lowercase letters, digits and `-`, 2..63 characters (contract). */
export const SLUG_RE = /^[a-z0-9-]{2,63}$/;

/** Domain claims per app (the live host table holds them all in memory). */
export const MAX_DOMAINS_PER_APP = 1_000;

export const appNotFound = () => notFound("No such app.", "app_not_found");

export interface ResolvedApp {
  app: AppRow;
  /** Set when the caller used a retired slug: the canonical slug to redirect to. */
  redirectedFrom: string | null;
}

/** By id, current slug or a slug in the permanent history. */
export async function resolveAppRef(repo: AppsRepo, ref: string): Promise<ResolvedApp> {
  const byId = await repo.byId(ref);
  if (byId) return { app: byId, redirectedFrom: null };
  const bySlug = await repo.bySlug(ref);
  if (bySlug) return { app: bySlug, redirectedFrom: null };
  const owner = await repo.historyOwner(ref);
  const app = owner ? await repo.byId(owner) : null;
  if (app) return { app, redirectedFrom: ref };
  throw appNotFound();
}

export async function resolveApp(repo: AppsRepo, ref: string): Promise<AppRow> {
  return (await resolveAppRef(repo, ref)).app;
}

export type SlugStatus =
  | { slug: string; available: true; reason: "free" | "own_history" | "current" }
  | { slug: string; available: false; reason: "invalid" | "taken" }
  | { slug: string; available: false; reason: "in_history"; app_id: string; force_allowed: true };

export interface AppsDeps {
  database: Database<PlatformDB>;
  clock: Clock;
  /** Called after a commit that changes host claims (route table refresh on every node). */
  onChanged: (appId: string) => Promise<void>;
  /** PLATFORM_FILES_ROOT: a deleted app's stored file bytes live in one folder below it. */
  filesRoot: string;
}

function invalidSlug(field = "slug"): AppError {
  return new AppError(422, "invalid_slug", "A slug is 2 to 63 lowercase letters, digits or -.", { field });
}

/** Apps, slugs with permanent history, and domain claims. */
export function createApps(deps: AppsDeps) {
  const { database, clock } = deps;
  const repo = appsRepo(database);

  async function slugStatus(slug: string, forAppId: string | null, db = database.db): Promise<SlugStatus> {
    if (!SLUG_RE.test(slug)) return { slug, available: false, reason: "invalid" };
    const current = await repo.bySlug(slug, db);
    if (current) {
      return current.id === forAppId
        ? { slug, available: true, reason: "current" }
        : { slug, available: false, reason: "taken" };
    }
    const owner = await repo.historyOwner(slug, db);
    if (owner && owner !== forAppId)
      return { slug, available: false, reason: "in_history", app_id: owner, force_allowed: true };
    return { slug, available: true, reason: owner ? "own_history" : "free" };
  }

  /** Throws the right error unless `slug` may be used by `appId` (taking over history with force). */
  async function claimSlug(
    db: typeof database.db,
    slug: string,
    appId: string | null,
    force: boolean,
  ): Promise<void> {
    const st = await slugStatus(slug, appId, db);
    if (st.available) {
      if (st.reason === "own_history") await repo.removeHistory(db, slug);
      return;
    }
    if (st.reason === "invalid") throw invalidSlug();
    if (st.reason === "taken")
      throw conflict("slug_taken", `The slug ${slug} is used by another app.`, { field: "slug" });
    if (st.reason !== "in_history") throw invalidSlug();
    if (!force)
      throw conflict(
        "slug_in_history",
        `The slug ${slug} was used by another app and still redirects there; send force: true to take it over.`,
        { field: "slug", app_id: st.app_id },
      );
    // Takeover: the old app's redirect from this slug ends here.
    await repo.removeHistory(db, slug);
  }

  const mapUnique = (err: unknown): never => {
    if (database.dialect.isUniqueViolation(err))
      throw conflict("slug_taken", "That slug was just taken.", { field: "slug" });
    throw err;
  };

  return {
    repo,
    slugStatus: (slug: string, forAppId: string | null) => slugStatus(slug, forAppId),

    async create(input: {
      slug: string;
      name?: string | undefined;
      description?: string | undefined;
      force?: boolean | undefined;
    }): Promise<AppRow> {
      const now = clock.iso();
      const row: AppRow = {
        id: newId(),
        slug: input.slug,
        name: input.name ?? input.slug,
        description: input.description ?? "",
        created_at: now,
        updated_at: now,
      };
      await database
        .writeTx(async (trx) => {
          await claimSlug(trx, input.slug, null, input.force ?? false);
          await repo.insert(trx, row);
        })
        .catch(mapUnique);
      return row;
    },

    async update(
      ref: string,
      input: {
        slug?: string | undefined;
        name?: string | undefined;
        description?: string | undefined;
        force?: boolean | undefined;
      },
    ): Promise<AppRow> {
      const app = await resolveApp(repo, ref);
      const now = clock.iso();
      await database
        .writeTx(async (trx) => {
          if (!(await repo.lock(trx, app.id))) throw appNotFound();
          const fresh = (await repo.byId(app.id, trx)) as AppRow;
          const patch: Partial<AppRow> = { updated_at: now };
          if (input.name !== undefined) patch.name = input.name;
          if (input.description !== undefined) patch.description = input.description;
          if (input.slug !== undefined && input.slug !== fresh.slug) {
            await claimSlug(trx, input.slug, app.id, input.force ?? false);
            // The old slug is kept forever so links keep working.
            await repo.addHistory(trx, fresh.slug, app.id, now);
            patch.slug = input.slug;
          }
          await repo.update(trx, app.id, patch);
        })
        .catch(mapUnique);
      return (await repo.byId(app.id)) as AppRow;
    },

    async remove(ref: string): Promise<void> {
      const app = await resolveApp(repo, ref);
      await database.writeTx(async (trx) => {
        // The app's data rows have no foreign key to apps: purged in the same transaction.
        await repo.deleteAppData(trx, app.id);
        if (!(await repo.delete(trx, app.id))) throw appNotFound();
      });
      await deps.onChanged(app.id);
      // After the commit: the rows that pointed at these bytes are gone. Same folder naming as the blob store.
      await rm(join(deps.filesRoot, app.id.replace(/[^A-Za-z0-9-]/g, "_")), { recursive: true, force: true });
    },

    async addDomain(appId: string, rawHost: string): Promise<DomainRow> {
      const host = parseClaim(rawHost);
      const row: DomainRow = {
        id: newId(),
        app_id: appId,
        host,
        kind: host.startsWith("*.") ? "wildcard" : "exact",
        created_at: clock.iso(),
      };
      await database
        .writeTx(async (trx) => {
          if (!(await repo.lock(trx, appId))) throw appNotFound();
          if ((await repo.domainCount(trx, appId)) >= MAX_DOMAINS_PER_APP)
            throw conflict("limit_reached", `An app may claim at most ${MAX_DOMAINS_PER_APP} hosts.`, {
              limit: MAX_DOMAINS_PER_APP,
            });
          const existing = await repo.domainByHost(trx, host);
          if (existing) throw domainTaken(host, existing.app_id);
          await repo.insertDomain(trx, row);
        })
        .catch((err) => {
          if (database.dialect.isUniqueViolation(err)) throw domainTaken(host, null);
          throw err;
        });
      await deps.onChanged(appId);
      return row;
    },

    async removeDomain(appId: string, idOrHost: string): Promise<void> {
      const removed = await database.writeTx((trx) => repo.deleteDomain(trx, appId, idOrHost));
      if (!removed) throw notFound("No such domain claim on this app.", "domain_not_found");
      await deps.onChanged(appId);
    },
  };
}
export type Apps = ReturnType<typeof createApps>;

function domainTaken(host: string, appId: string | null): AppError {
  return conflict(
    "domain_taken",
    `The host ${host} is already claimed.`,
    appId ? { field: "host", app_id: appId } : { field: "host" },
  );
}

/** A claim: exact `api.example.com` (or localhost, an IP) or wildcard `*.example.com`; lowercased. */
export function parseClaim(raw: string): string {
  const h = raw.trim().toLowerCase().replace(/\.$/, "");
  if (h.startsWith("*.")) {
    if (!wildcardSuffix(h))
      throw new AppError(422, "invalid_host", "A wildcard claim looks like *.example.com.", {
        field: "host",
      });
    return h;
  }
  const n = normalizeHost(h);
  if (n !== h.replace(/^\[|\]$/g, "") || !validHostName(n))
    throw new AppError(422, "invalid_host", "host must be a host name without scheme, port or path.", {
      field: "host",
    });
  return n;
}
