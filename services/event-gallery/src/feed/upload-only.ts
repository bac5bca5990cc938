import type { AuthedUser, GalleryContext } from "../context.js";
import { getEvent } from "../event/state.js";

/**
 * Upload-only mode (issue 27, contract "Live event"): with the `upload_only` setting on and the
 * gallery not yet released, a guest's feed, delta, uploader list and media routes show only the
 * guest's own uploads. Hosts and the admin see everything (they run the venue slideshow). A
 * guest's session stays restricted wherever it asks, the slideshow page included: a flag a client
 * could send would open everything to any guest. The event row is read only while the setting is on.
 */
export async function restrictedToOwn(
  ctx: Pick<GalleryContext, "settings" | "database">,
  user: Pick<AuthedUser, "role">,
): Promise<boolean> {
  if (user.role !== "guest") return false;
  if (!(await ctx.settings.get("upload_only"))) return false;
  return (await getEvent(ctx.database.reader)).export_released_at === null;
}
