import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import {
  type AppliedRow,
  appliedMigrations,
  type Migration,
  MigrationError,
  ping,
  plan,
} from "../db/migrator.js";
import { unavailable } from "../errors.js";

export type NotReadyReason =
  | "database_unavailable"
  | "database_not_durable"
  | "migrations_pending"
  | "migrations_mismatch";

export interface ReadinessOptions<DB> {
  /**
   * The service database; only its read path is used (`SELECT 1`, then schema_migrations), and
   * on SQLite whether its writes can still be made durable.
   */
  database: { readonly reader: Kysely<DB>; readonly durability?: { readonly failed: boolean } | null };
  /** The migrations this code ships (the migrator's list). */
  migrations: readonly Migration[];
  /** Retry-After on a 503, in seconds (default 5). */
  retryAfterS?: number;
}

const MESSAGES: Record<NotReadyReason, string> = {
  database_unavailable: "The database does not answer.",
  database_not_durable:
    "The database can no longer make writes durable (a sync of its write-ahead log failed); restart the service.",
  migrations_pending: "Database migrations are pending.",
  migrations_mismatch: "The database schema does not match this version of the service.",
};

/** Why the service cannot serve yet, or null when the database answers and its schema is current. */
export async function checkReadiness<DB>(opts: ReadinessOptions<DB>): Promise<NotReadyReason | null> {
  const db = opts.database.reader;
  // Reads still work then, but every write fails until a restart: only a restart helps.
  if (opts.database.durability?.failed) return "database_not_durable";
  try {
    await ping(db);
  } catch {
    return "database_unavailable";
  }
  let applied: AppliedRow[];
  try {
    applied = await appliedMigrations(db);
  } catch {
    // The database answers but has no migration table yet.
    return "migrations_pending";
  }
  try {
    return plan(opts.migrations, applied).length > 0 ? "migrations_pending" : null;
  } catch (err) {
    if (err instanceof MigrationError) return "migrations_mismatch";
    throw err;
  }
}

/**
 * `GET /readyz`: 200 `ok` (text/plain) when the database answers, can make writes durable and every
 * shipped migration is applied; otherwise 503 in the common error shape with the reason as `code` and Retry-After.
 * `/healthz` stays the liveness probe. Open, like /healthz: it reveals only the reason code.
 */
export function registerReadiness<DB>(app: FastifyInstance, opts: ReadinessOptions<DB>): void {
  const retryAfterS = opts.retryAfterS ?? 5;
  app.get("/readyz", async (_req, reply) => {
    const reason = await checkReadiness(opts);
    if (reason) throw unavailable(retryAfterS, MESSAGES[reason], reason);
    return reply.type("text/plain; charset=utf-8").send("ok");
  });
}
