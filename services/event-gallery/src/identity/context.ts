import type { AuthedUser, GalleryContext } from "../context.js";
import { eventView } from "../event/state.js";
import { pinResetPending } from "./repository.js";

/** GET /me/context: the caller, the event, and whether a PIN reset request is pending (hot read). */
export async function meContext(ctx: GalleryContext, me: AuthedUser) {
  const { reader } = ctx.database;
  const [event, pending] = await Promise.all([
    eventView(reader, ctx.settings),
    pinResetPending(reader, me.id),
  ]);
  return {
    user: { id: me.id, display_name: me.display_name, role: me.role, is_banned: me.is_banned },
    event,
    pin_reset_pending: pending,
  };
}
