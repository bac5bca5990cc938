/**
 * The gallery API's shapes as zod schemas (the event-gallery contract): the routes declare them,
 * the OpenAPI document is built from them, and the web app takes its types from them
 * (`import type` only, so nothing of this module reaches the web bundle).
 * Imports zod and nothing else: the web build must be able to read this file.
 *
 * Response objects are `z.object` (extra fields pass): a field added later by a domain module is
 * sent as-is, and the schema says what clients can count on.
 */
import { z } from "zod";

const iso = z.string().describe("RFC 3339 UTC timestamp");

export const Role = z.enum(["guest", "host", "admin"]);
export const User = z
  .object({ id: z.string(), display_name: z.string(), role: Role, is_banned: z.boolean() })
  .meta({ id: "User" });
export const EventInfo = z
  .object({
    name: z.string(),
    uploads_locked: z.boolean(),
    released: z.boolean(),
    keepsake_ready: z.boolean(),
  })
  .meta({ id: "Event" });
/** `/me/context`'s event: the event plus what the web app needs to know of the live-event settings. */
export const MeEvent = EventInfo.extend({
  upload_only: z.boolean().describe("upload-only mode is on and the gallery is not released yet"),
  guestbook_enabled: z.boolean(),
  guestbook_voice: z.boolean(),
});
export const Me = z.object({ user: User, event: MeEvent, pin_reset_pending: z.boolean() });

export const Session = z.object({ token: z.string(), user: User });
export const Joined = z.object({ token: z.string(), pin: z.string().regex(/^\d{4}$/), user: User });

export const Item = z
  .object({
    id: z.string(),
    uploader: z.object({ id: z.string(), display_name: z.string() }),
    caption: z.string(),
    hashtags: z.array(z.string()),
    media_type: z.enum(["image", "video"]),
    mime_type: z.string(),
    created_at: iso,
    updated_at: iso,
    like_count: z.number().int(),
    comment_count: z.number().int(),
    liked_by_me: z.boolean(),
    compression_status: z.string(),
    width: z.number().nullable(),
    height: z.number().nullable(),
    duration_s: z.number().nullable(),
    original_url: z.string().nullable(),
    preview_url: z.string().nullable(),
    display_url: z.string().nullable(),
    thumbnail_url: z.string().nullable(),
    approval: z
      .enum(["approved", "pending"])
      .optional()
      .describe("pending: only the uploader and hosts see it"),
    favorited_by_me: z
      .boolean()
      .optional()
      .describe("the viewer starred it (private to the viewer); always sent"),
    highlight: z.boolean().optional().describe("a host marked it as a highlight; always sent"),
  })
  .meta({ id: "Upload" });
export const UploadBody = z.object({ upload: Item });

export const FeedPage = z.object({
  items: z.array(Item),
  next_cursor: z.string().nullable(),
  delta_cursor: z.string(),
});
/** GET /event/public (open): the event card. */
export const PublicEvent = z
  .object({
    name: z.string(),
    welcome_text_en: z.string(),
    welcome_text_de: z.string(),
    accent_color: z.string().describe("#rrggbb"),
    cover_url: z.string().nullable(),
    public_url: z.string().nullable(),
  })
  .meta({ id: "PublicEvent" });
/** `/feed?mine=1`: the caller's own uploads, pending ones included. */
export const MyUploads = z.object({ items: z.array(Item), next_cursor: z.string().nullable() });
export const Delta = z.object({
  items: z.array(Item),
  changes: z.array(Item),
  removed_ids: z.array(z.string()),
  hidden_user_ids: z.array(z.string()),
  unhidden_user_ids: z
    .array(z.string())
    .describe("users unbanned since the cursor; their uploads are in changes"),
  cursor: z.string(),
  has_more: z.boolean(),
});
export const Uploaders = z.object({
  uploaders: z.array(z.object({ id: z.string(), display_name: z.string(), upload_count: z.number().int() })),
});

export const Like = z.object({ liked: z.boolean(), like_count: z.number().int() });
export const Comment = z
  .object({
    id: z.string(),
    upload_id: z.string(),
    user: z.object({ id: z.string(), display_name: z.string() }),
    text: z.string(),
    created_at: iso,
  })
  .meta({ id: "Comment" });

export const HostUser = User.extend({
  upload_count: z.number().int(),
  pin_reset_requested_at: iso.nullable(),
  pin_locked_until: iso.nullable(),
});
export const AuditEntry = z.object({
  id: z.string(),
  actor: z.unknown(),
  action: z.string(),
  target: z.unknown(),
  created_at: iso,
});
export const HostEvent = z.object({
  event: EventInfo,
  uploads_locked_at: iso.nullable(),
  export_released_at: iso.nullable(),
  export_epoch: z.number().int(),
  low_disk_warning: z.boolean(),
  free_bytes: z.number(),
  keepsake_estimate_bytes: z.number(),
});

export const JobState = z.object({
  status: z.string(),
  progress_pct: z.number(),
  ready: z.boolean(),
  message: z.string().optional().describe("Hosts only, while the job is failed"),
});
export const ExportStatus = z.object({
  released: z.boolean(),
  epoch: z.number().int(),
  zip: JobState,
  html: JobState,
});
export const Ticket = z.object({ ticket: z.string(), expires_at: iso });

/** The admin's runtime config (the allowlist of the event-gallery contract). */
export const ConfigValues = z
  .object({
    event_name: z.string(),
    quota_tolerance: z.number(),
    upload_rate_per_hour: z.number(),
    join_ip_rate_per_min: z.number(),
    recover_ip_rate_per_min: z.number(),
    feed_rate_per_min: z.number(),
    delta_rate_per_min: z.number(),
    export_downloads_per_day: z.number(),
    max_upload_bytes: z.number(),
  })
  .meta({ id: "Config" });
/** An export job as the host's rebuild reports it. */
export const ExportJob = z.object({
  kind: z.enum(["zip", "html"]),
  status: z.string(),
  epoch: z.number().int(),
  progress_pct: z.number(),
  message: z.string().nullable(),
});
export const DiskUsage = z.object({
  free_bytes: z.number(),
  total_bytes: z.number(),
  media_bytes: z.number(),
  originals_bytes: z.number(),
  derivatives_bytes: z.number(),
});
export const JobsOverview = z.object({
  export_jobs: z.array(z.object({ kind: z.string(), status: z.string() }).loose()),
  derivative_backlog: z.number().int(),
  failed_uploads: z.number().int(),
});
/** GET /admin/failed-uploads (issue 14): uploads whose derivatives failed 3 times, newest first. */
export const FailedUpload = z
  .object({
    id: z.string(),
    uploader: z.object({ id: z.string(), display_name: z.string() }),
    mime_type: z.string(),
    size_bytes: z.number().int(),
    created_at: iso,
    failed_at: iso.nullable(),
    attempts: z.number().int(),
    reason: z.string().nullable().describe("the last error, without filesystem paths"),
    original_kept: z.boolean().describe("false once the original was reclaimed (after 14 days)"),
  })
  .meta({ id: "FailedUpload" });
export const FailedUploads = z.object({ items: z.array(FailedUpload), total: z.number().int() });

export type User = z.infer<typeof User>;
export type EventInfo = z.infer<typeof EventInfo>;
export type Me = z.infer<typeof Me>;
export type Item = z.infer<typeof Item>;
export type Comment = z.infer<typeof Comment>;
export type FeedPage = z.infer<typeof FeedPage>;
export type Delta = z.infer<typeof Delta>;
export type FailedUpload = z.infer<typeof FailedUpload>;
export type JobState = z.infer<typeof JobState>;
export type ExportStatus = z.infer<typeof ExportStatus>;
export type HostUser = z.infer<typeof HostUser>;
export type HostEvent = z.infer<typeof HostEvent>;
export type Ticket = z.infer<typeof Ticket>;

/** A guestbook message (issue 27, contract "Live event"). */
export const GuestbookEntry = z
  .object({
    id: z.string(),
    author: z.object({ id: z.string(), display_name: z.string() }),
    text: z.string(),
    voice_url: z
      .string()
      .nullable()
      .describe("gated like media URLs (`?t=` media token); null without voice"),
    voice_duration_s: z.number().nullable(),
    created_at: iso,
    approval: z.enum(["approved", "pending"]).describe("pending: only the author and hosts see it"),
  })
  .meta({ id: "GuestbookEntry" });
export const GuestbookPage = z.object({ items: z.array(GuestbookEntry), next_cursor: z.string().nullable() });
export type GuestbookEntry = z.infer<typeof GuestbookEntry>;
export type GuestbookPage = z.infer<typeof GuestbookPage>;
