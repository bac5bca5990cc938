import type { AuthedUser, GalleryContext } from "../context.js";
import { eventView } from "../event/state.js";
import { pinResetPending } from "./repository.js";

/** GET /me/context: the caller, the event, and whether a PIN reset request is pending (hot read). */
export async function meContext(ctx: Pick<GalleryContext, "database" | "settings">, me: AuthedUser) {
  const { reader } = ctx.database;
  const [event, pending, settings] = await Promise.all([
    eventView(reader, ctx.settings),
    pinResetPending(reader, me.id),
    ctx.settings.all(),
  ]);
  return {
    user: { id: me.id, display_name: me.display_name, role: me.role, is_banned: me.is_banned },
    event: {
      ...event,
      // Upload-only mode ends with the release (issue 27).
      upload_only: settings.upload_only && !event.released,
      guestbook_enabled: settings.guestbook_enabled,
      guestbook_voice: settings.guestbook_voice,
    },
    pin_reset_pending: pending,
  };
}
