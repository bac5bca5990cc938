import { availableParallelism } from "node:os";
import { commonEnv, type EnvValues, envVar } from "@app/kit/config";
import { metricsTokenEnv } from "@app/kit/http/metrics";
import { proxyEnv } from "@app/kit/http/proxy";
import { WEBHOOK_FORMATS } from "@app/kit/webhook-format";
import { z } from "zod";

/** Every variable event-gallery reads; the same spec validates start-up and prints --help. */
export const envSpec = {
  ...commonEnv("event-gallery", 3001),
  ...proxyEnv(),
  GALLERY_ADMIN_NAME: envVar(
    z
      .string()
      .trim()
      .min(1, "must be 1 to 40 characters")
      .max(40, "must be 1 to 40 characters")
      .default("Admin"),
    "display name of the admin account (reserved for guests)",
  ),
  GALLERY_ADMIN_PASSWORD: envVar(
    z.string().min(8, "must be at least 8 characters").optional(),
    "admin password; unset on first start → a random one is generated, stored hashed and printed once",
    { secret: true, defaultText: "generated on first start" },
  ),
  GALLERY_JWT_SECRET: envVar(
    z.string().min(32, "must be at least 32 characters").optional(),
    "HS256 key for session tokens; unset → generated once and kept in DATA_DIR/jwt-secret (mode 0600)",
    { secret: true, defaultText: "generated under DATA_DIR" },
  ),
  FFMPEG_PATH: envVar(
    z.string().min(1).optional(),
    "ffmpeg binary for video thumbnails (Debian's ffmpeg package provides it)",
    { defaultText: "ffmpeg on PATH" },
  ),
  FFPROBE_PATH: envVar(z.string().min(1).optional(), "ffprobe binary for video size and duration", {
    defaultText: "next to FFMPEG_PATH, else ffprobe on PATH",
  }),
  GALLERY_PUBLIC_URL: envVar(
    z
      .string()
      .refine((s) => /^https?:\/\/[^\s/]+/.test(s) && URL.canParse(s), "must be an http(s) URL")
      .transform((s) => s.replace(/\/+$/, ""))
      .optional(),
    "address guests open (QR code, printed card); the admin's public_url setting overrides it",
    { defaultText: "the address the host page was opened at" },
  ),
  GALLERY_TIMEZONE: envVar(
    z
      .string()
      .refine((tz) => {
        try {
          new Intl.DateTimeFormat("en", { timeZone: tz });
          return true;
        } catch {
          return false;
        }
      }, "must be an IANA time zone such as Europe/Berlin")
      .default("Europe/Berlin"),
    "IANA time zone for times shown in the Memories keepsake viewer",
  ),
  GALLERY_RESUMABLE_TTL_HOURS: envVar(
    z.coerce
      .number()
      .positive()
      .max(24 * 365)
      .default(24),
    "hours an unfinished resumable (tus) upload is kept before it and its bytes are removed",
  ),
  GALLERY_UPLOAD_IDLE_S: envVar(
    z.coerce.number().int().min(1).max(3600).default(60),
    "seconds an upload request may send no bytes before it is ended (its temp file is removed)",
  ),
  GALLERY_DERIVATIVE_WORKERS: envVar(
    z.coerce.number().int().min(1).max(64).default(availableParallelism()),
    "photos and videos compressed at once (each render also uses sharp's own threads)",
    { defaultText: "the number of CPU cores" },
  ),
  GALLERY_NOTIFY_WEBHOOK_URL: envVar(
    z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).optional(),
    "receives a POST when uploads wait for approval (at most once a minute) and when a guest asks for a PIN reset",
    { secret: true },
  ),
  GALLERY_NOTIFY_WEBHOOK_FORMAT: envVar(
    z.enum(WEBHOOK_FORMATS).default("json"),
    "json: {event, title, text, message, at}; slack: {text} (Slack, Mattermost); ntfy: text/plain with Title/Tags/Priority headers; gotify: {title, message, priority}",
  ),
  METRICS_TOKEN: metricsTokenEnv(),
};

export type Config = EnvValues<typeof envSpec>;
