import type { Clock } from "@app/kit/clock";
import { ConfigError } from "@app/kit/config";
import type { Database } from "@app/kit/db";
import { newId } from "@app/kit/ids";
import type { Logger } from "@app/kit/logger";
import { randomPassword } from "../crypto/tokens.js";
import type { PlatformDB } from "../db/schema.js";
import { adminsRepo } from "./admins-repository.js";
import { hashPassword } from "./passwords.js";

/**
 * The first admin: from PLATFORM_ADMIN_USERNAME/PASSWORD, or (both unset) `admin` with a random
 * password announced once. Inert once any admin exists. Returns the created username, if any.
 */
export async function bootstrapAdmin(opts: {
  database: Database<PlatformDB>;
  clock: Clock;
  logger: Logger;
  username: string | undefined;
  password: string | undefined;
  announce: (line: string) => void;
}): Promise<string | null> {
  const { database } = opts;
  const repo = adminsRepo(database);
  if ((await repo.count()) > 0) return null;
  if (opts.username && !opts.password)
    throw new ConfigError("PLATFORM_ADMIN_PASSWORD", "is required when PLATFORM_ADMIN_USERNAME is set");
  if (opts.password && !opts.username)
    throw new ConfigError("PLATFORM_ADMIN_USERNAME", "is required when PLATFORM_ADMIN_PASSWORD is set");
  const generated = !opts.username;
  const username = opts.username ?? "admin";
  const password = opts.password ?? randomPassword();
  const hash = await hashPassword(password);
  const created = await database.writeTx(async (trx) => {
    // Two nodes starting at once: the second waits here, then finds an admin.
    await repo.lockAgainstWriters(trx);
    if ((await repo.count(trx)) > 0) return false;
    const now = opts.clock.iso();
    await repo.insert(trx, {
      id: newId(),
      username,
      password_hash: hash,
      instance_role: "admin",
      is_active: 1,
      email: null,
      mfa_secret: null,
      created_at: now,
      updated_at: now,
      last_login_at: null,
    });
    return true;
  });
  if (!created) return null;
  opts.logger.info({ username }, "bootstrap admin created");
  if (generated) {
    // Printed once, outside the structured log, so it never lands in log storage.
    opts.announce(`Created admin account "admin" with password: ${password}`);
    opts.announce("Change it after logging in (PATCH /api/v1/admin/admins/{id}); it is not shown again.");
  }
  return username;
}
