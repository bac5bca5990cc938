import type { Kysely } from "@app/kit/db";
import { AppError, forbidden, notFound } from "@app/kit/errors";
import { type AuditAction, recordAudit } from "../audit/repository.js";
import type { AuthedUser, GalleryContext } from "../context.js";
import type { GalleryDB, Role } from "../db/schema.js";
import { bumpEpochIfReleased } from "../event/state.js";
import { hashSecret, newPin } from "../identity/secrets.js";
import { type UserView, userView } from "../identity/users.js";
import { markCommentDeleted, touchActivity, touchActivityOfUser } from "../social/repository.js";
import { softDeleteAndRefund } from "../uploads/repository.js";
import * as repo from "./repository.js";

export interface HostUserView extends UserView {
  upload_count: number;
  pin_reset_requested_at: string | null;
  pin_locked_until: string | null;
}

const invalidState = (message: string) => new AppError(409, "invalid_state", message);

/** What moderation needs of the gallery context. */
export type ModerationDeps = Pick<GalleryContext, "database" | "clock" | "bus">;

export type ModerationService = ReturnType<typeof createModerationService>;

/** Host and admin moderation; every action is recorded in host_audit in its own transaction. */
export function createModerationService(deps: ModerationDeps) {
  async function listUsers(): Promise<HostUserView[]> {
    const rows = await repo.usersWithUploadCounts(deps.database.db);
    const now = deps.clock.now();
    return rows.map((r) => ({
      ...userView(r),
      upload_count: Number(r.upload_count ?? 0),
      pin_reset_requested_at: r.pin_reset_requested_at,
      // A lock in the past is no lock.
      pin_locked_until:
        r.pin_locked_until && Date.parse(r.pin_locked_until) > now ? r.pin_locked_until : null,
    }));
  }

  /** Lock the target row, apply the rules, write, audit: one transaction. */
  async function onUser<T>(
    actor: AuthedUser,
    targetId: string,
    action: AuditAction,
    fn: (
      trx: Kysely<GalleryDB>,
      target: { id: string; role: Role; is_banned: number; display_name: string },
      now: string,
    ) => Promise<T | null>,
  ): Promise<T | null> {
    const { database, clock } = deps;
    return database.writeTx(async (trx) => {
      const target = await repo.lockUser(trx, database.dialect, targetId);
      if (!target) throw notFound("No such user.");
      const now = clock.iso();
      const out = await fn(trx, target, now);
      // null means "nothing changed": an idempotent repeat is not audited again.
      if (out !== null)
        await recordAudit(trx, database, {
          actorId: actor.id,
          action,
          targetType: "user",
          targetId,
          at: now,
          details: { display_name: target.display_name },
        });
      return out;
    });
  }

  async function currentView(id: string): Promise<UserView> {
    return userView(await repo.userViewRow(deps.database.db, id));
  }

  /** Read-only for the target, content hidden everywhere; hosts cannot ban the admin. */
  async function setBanned(actor: AuthedUser, targetId: string, banned: boolean): Promise<UserView> {
    const { clock } = deps;
    const changed = await onUser(actor, targetId, banned ? "ban" : "unban", async (trx, target, now) => {
      if (target.role === "admin") throw forbidden("The admin cannot be banned.");
      if (target.id === actor.id) throw invalidState("You cannot ban or unban yourself.");
      if ((target.is_banned === 1) === banned) return null;
      await repo.setBan(trx, target.id, banned, now);
      // The counts on others' uploads the user liked or commented change too: /feed/delta reports them.
      await touchActivityOfUser(trx, target.id, now);
      // Hiding or re-showing a user's content changes the keepsake.
      await bumpEpochIfReleased(trx, clock);
      return true;
    });
    if (changed) deps.bus.publish(banned ? "user-hidden" : "user-unhidden", { user_id: targetId });
    return currentView(targetId);
  }

  /** Only the admin promotes guests to host or demotes hosts. */
  async function setRole(actor: AuthedUser, targetId: string, role: "host" | "guest"): Promise<UserView> {
    if (actor.role !== "admin") throw forbidden("Only the admin can change roles.");
    await onUser(actor, targetId, role === "host" ? "promote" : "demote", async (trx, target, now) => {
      if (target.role === "admin") throw invalidState("The admin's role cannot change.");
      if (role === "host" && target.is_banned === 1) throw invalidState("A banned user cannot be promoted.");
      if (target.role === role) return null;
      await repo.setRole(trx, target.id, role, now);
      return true;
    });
    return currentView(targetId);
  }

  /** A fresh PIN; clears the lock, the failure streak and the pending request. */
  async function resetPin(actor: AuthedUser, targetId: string): Promise<string> {
    const pin = newPin();
    const pinHash = await hashSecret(pin);
    await onUser(actor, targetId, "reset_pin", async (trx, target, now) => {
      if (target.role === "admin") throw forbidden("The admin signs in with a password.");
      await repo.storeResetPin(trx, target.id, pinHash, now);
      return true;
    });
    deps.bus.publish("pin-reset", { user_id: targetId }, { hostsOnly: true });
    return pin;
  }

  /**
   * Host takedown: soft delete with deleted_by='host' (the idempotency key stays claimed), refund
   * the uploader's quota (never below 0), and bump the epoch after release, all in one transaction.
   */
  /** `action` names it in the audit: a pre-moderation rejection is a takedown too. */
  async function takedownUpload(
    actor: AuthedUser,
    uploadId: string,
    action: "remove_upload" | "reject_upload" = "remove_upload",
  ): Promise<void> {
    const { database, clock } = deps;
    await database.writeTx(async (trx) => {
      const upload = await repo.lockLiveUpload(trx, database.dialect, uploadId);
      if (!upload) throw notFound("No such upload.");
      const now = clock.iso();
      await softDeleteAndRefund(trx, upload, "host", now);
      await bumpEpochIfReleased(trx, clock);
      await recordAudit(trx, database, {
        actorId: actor.id,
        action,
        targetType: "upload",
        targetId: upload.id,
        at: now,
        details: { uploader_id: upload.user_id },
      });
    });
    deps.bus.publish("upload-removed", { upload_id: uploadId });
  }

  async function removeComment(actor: AuthedUser, commentId: string): Promise<void> {
    const { database, clock } = deps;
    const uploadId = await database.writeTx(async (trx) => {
      const c = await repo.lockLiveComment(trx, database.dialect, commentId);
      if (!c) throw notFound("No such comment.");
      const now = clock.iso();
      await markCommentDeleted(trx, c.id, "host", now);
      await touchActivity(trx, c.upload_id, now);
      await bumpEpochIfReleased(trx, clock);
      await recordAudit(trx, database, {
        actorId: actor.id,
        action: "remove_comment",
        targetType: "comment",
        targetId: c.id,
        at: now,
        details: { upload_id: c.upload_id, author_id: c.user_id },
      });
      return c.upload_id;
    });
    deps.bus.publish("comment-removed", { upload_id: uploadId, comment_id: commentId });
  }

  return { listUsers, setBanned, setRole, resetPin, takedownUpload, removeComment };
}
