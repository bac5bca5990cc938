import type { Kysely } from "@app/kit/db";
import { newId } from "@app/kit/ids";
import type { GalleryContext } from "../context.js";
import type { GalleryDB } from "../db/schema.js";
import { NAME_MAX, nameKey } from "./names.js";
import { findAdmin, findUserByKey, insertUser, renameUser, updateAdmin } from "./repository.js";
import { hashSecret, newPassword, verifySecret } from "./secrets.js";

/** Pick a free "<name> (guest)" style name for an account that held the admin's display name. */
async function freeSquatterName(
  trx: Kysely<GalleryDB>,
  base: string,
): Promise<{ name: string; key: string }> {
  for (let n = 1; n < 1000; n++) {
    const suffix = n === 1 ? " (guest)" : ` (guest ${n})`;
    const name = [...base].slice(0, NAME_MAX - suffix.length).join("") + suffix;
    const key = nameKey(name);
    if (!(await findUserByKey(trx, key))) return { name, key };
  }
  throw new Error("no free name for the account holding the admin name");
}

/**
 * Start-up: make sure exactly one admin account exists under GALLERY_ADMIN_NAME with a password.
 * A guest who holds that name is renamed (never promoted). With GALLERY_ADMIN_PASSWORD unset and
 * no stored password, a random one is generated, stored hashed and returned (the start-up
 * banner prints it once; it never goes into a log line).
 */
export async function ensureAdmin(
  deps: Pick<GalleryContext, "database" | "clock" | "logger" | "config">,
): Promise<{ name: string; generatedPassword: string | null }> {
  const { database, clock, logger, config } = deps;
  const name = config.GALLERY_ADMIN_NAME.normalize("NFC").trim().replace(/\s+/gu, " ");
  const key = nameKey(name);
  const existing = await findAdmin(database.db);

  let newHash: string | null = null;
  let generated: string | null = null;
  if (config.GALLERY_ADMIN_PASSWORD) {
    const current = existing?.password_hash;
    if (!current || !(await verifySecret(current, config.GALLERY_ADMIN_PASSWORD)))
      newHash = await hashSecret(config.GALLERY_ADMIN_PASSWORD);
  } else if (!existing?.password_hash) {
    generated = newPassword();
    newHash = await hashSecret(generated);
  }

  const now = clock.iso();
  const { renamed, stored } = await database.writeTx(async (trx) => {
    const admin = await findAdmin(trx);
    // Another process may have stored a generated password meanwhile: keep that one.
    const hash = generated && admin?.password_hash ? null : newHash;
    const holder = await findUserByKey(trx, key);
    let squatter: string | null = null;
    if (holder && holder.role !== "admin") {
      const free = await freeSquatterName(trx, holder.display_name);
      await renameUser(trx, holder.id, free.name, free.key, now);
      squatter = holder.id;
    }
    if (!admin)
      await insertUser(trx, {
        id: newId(),
        name,
        key,
        role: "admin",
        pinHash: null,
        passwordHash: hash,
        clientJoinId: null,
        now,
      });
    else await updateAdmin(trx, admin.id, { name, key, passwordHash: hash, now });
    return { renamed: squatter, stored: hash !== null };
  });
  if (renamed) logger.warn({ user_id: renamed }, "a guest held the admin display name and was renamed");
  if (generated && stored)
    logger.warn(
      "admin password generated: printed once in the start-up banner (set GALLERY_ADMIN_PASSWORD to choose one)",
    );
  return { name, generatedPassword: generated && stored ? generated : null };
}
