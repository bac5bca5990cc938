import type { AuthedUser, GalleryContext } from "../context.js";
import { approvalOf } from "./repository.js";

export type Approval = "approved" | "pending";

/**
 * Pre-moderation: with the `premoderation` setting on, a guest's new upload waits for a host.
 * Hosts' and the admin's own uploads need nobody's approval.
 */
export async function pendingApprovalFor(
  ctx: Pick<GalleryContext, "settings">,
  user: Pick<AuthedUser, "role">,
): Promise<Approval> {
  if (user.role !== "guest") return "approved";
  return (await ctx.settings.get("premoderation")) ? "pending" : "approved";
}

/**
 * Tell the stream about a committed upload: hosts hear `upload-pending` for one that waits (the
 * live badge, and host notifications), everyone hears `new-upload` for one that is visible at once.
 */
export async function announceUpload(
  ctx: Pick<GalleryContext, "database" | "bus" | "notify">,
  uploadId: string,
  user: Pick<AuthedUser, "id">,
): Promise<void> {
  if ((await approvalOf(ctx.database.db, uploadId)) === "pending") {
    ctx.bus.publish("upload-pending", { id: uploadId, user_id: user.id }, { hostsOnly: true });
    ctx.notify.uploadsPending();
  } else ctx.bus.publish("new-upload", { id: uploadId, user_id: user.id });
}
