import type { Kysely } from "@app/kit/db";
import type { GalleryDB, Role } from "../db/schema.js";

/** What clients see of a user (contract `user`). */
export interface UserView {
  id: string;
  display_name: string;
  role: Role;
  is_banned: boolean;
}

export const userView = (u: {
  id: string;
  display_name: string;
  role: Role;
  is_banned: number;
}): UserView => ({
  id: u.id,
  display_name: u.display_name,
  role: u.role,
  is_banned: u.is_banned === 1,
});

export const USER_VIEW_COLUMNS = ["id", "display_name", "role", "is_banned"] as const;

export function findUserByKey(db: Kysely<GalleryDB>, key: string) {
  return db.selectFrom("users").selectAll().where("display_name_key", "=", key).executeTakeFirst();
}

export function findUserById(db: Kysely<GalleryDB>, id: string) {
  return db.selectFrom("users").selectAll().where("id", "=", id).executeTakeFirst();
}

export function findUserByJoinId(db: Kysely<GalleryDB>, clientJoinId: string) {
  return db.selectFrom("users").selectAll().where("client_join_id", "=", clientJoinId).executeTakeFirst();
}

export function findAdmin(db: Kysely<GalleryDB>) {
  return db
    .selectFrom("users")
    .selectAll()
    .where("role", "=", "admin")
    .orderBy("created_at")
    .executeTakeFirst();
}

/** Whether the user's PIN reset request is still unanswered. */
export async function pinResetPending(db: Kysely<GalleryDB>, id: string): Promise<boolean> {
  const row = await db
    .selectFrom("users")
    .select("pin_reset_requested_at")
    .where("id", "=", id)
    .executeTakeFirst();
  return Boolean(row?.pin_reset_requested_at);
}
