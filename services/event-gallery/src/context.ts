import type { IncomingHttpHeaders } from "node:http";
import type { Clock } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import type { Logger } from "@app/kit/logger";
import type { Config } from "./config.js";
import type { GalleryDB, Role } from "./db/schema.js";

/**
 * What every gallery module receives. Built once in app.ts; other modules depend on these interfaces, not on each other's internals.
 */
export interface GalleryContext {
  config: Config;
  clock: Clock;
  logger: Logger;
  database: Database<GalleryDB>;
  paths: {
    dataDir: string;
    /** originals/ and derivatives/ live below this. */
    mediaDir: string;
    /** finished keepsake archives. */
    exportsDir: string;
  };
  settings: SettingsStore;
  auth: Auth;
  limiter: RateLimiter;
  bus: EventBus;
  disk: DiskProbe;
  /** This instance's owner id for temp files (uploads/temp-owners.ts). */
  tempOwner: string;
  /** Host notifications (Web Push, webhook): fire-and-forget. */
  notify: HostNotifications;
}

/** Runtime configuration (config table over the contract's allowlist defaults). */
export interface Settings {
  event_name: string;
  quota_tolerance: number;
  upload_rate_per_hour: number;
  join_ip_rate_per_min: number;
  recover_ip_rate_per_min: number;
  feed_rate_per_min: number;
  delta_rate_per_min: number;
  export_downloads_per_day: number;
  max_upload_bytes: number;
  /** Hosts approve guests' uploads before anyone else sees them (issue 14). */
  premoderation: boolean;
  welcome_text_en: string;
  welcome_text_de: string;
  /** `#rrggbb`. */
  accent_color: string;
  /** Overrides GALLERY_PUBLIC_URL for the QR code and printed card; null = the env value. */
  public_url: string | null;
  /** Guests may write in the guestbook (issue 27). */
  guestbook_enabled: boolean;
  /** The guestbook also takes voice messages. */
  guestbook_voice: boolean;
  /** Guests see only their own uploads until the gallery is released (issue 27). */
  upload_only: boolean;
}
export interface SettingsStore {
  get<K extends keyof Settings>(key: K): Promise<Settings[K]>;
  all(): Promise<Settings>;
}

export interface AuthedUser {
  id: string;
  display_name: string;
  /** From the live row, never from the token. */
  role: Role;
  is_banned: boolean;
  sessionId: string;
  /** The feed and social stamps read with the session row (migrations 010, 011), when the session check read them. */
  stamps?: { feed: number; social: number };
  /** The user's viewer revision read with the session row (migration 011): per-viewer feed fields. */
  viewerRev?: number;
  /** Whether the user has pending uploads of their own (read with the session row). */
  hasPending?: boolean;
}
/**
 * The parts of an HTTP request the session check and the limits read. A FastifyRequest is one;
 * domain modules stay free of the HTTP framework's types.
 */
export interface RequestLike {
  headers: IncomingHttpHeaders;
  query?: unknown;
  socket: { remoteAddress?: string | undefined };
  ip?: string;
}

export interface Auth {
  /**
   * Resolve the caller from `Authorization: Bearer` (or, when `allowMediaToken`, `?t=`), re-reading
   * the live user row. 401 when missing/invalid/expired. `minRole` → 403 `forbidden` below it.
   * `write: true` → 403 `banned` for a banned user (checked before any ownership check).
   */
  requireUser(
    req: RequestLike,
    opts?: { minRole?: Role; write?: boolean; allowMediaToken?: boolean },
  ): Promise<AuthedUser>;
  /** A short-lived token for `?t=` on media URLs (so <img>/<video> tags work). */
  mediaToken(user: AuthedUser): Promise<string>;
  /** Client IP for limits: the first hop TRUST_PROXY does not trust, else the peer address. */
  clientIp(req: RequestLike): string;
}

/** Host notifications (notify/service.ts): what the rest of the gallery calls; both return at once and never throw. */
export interface HostNotifications {
  uploadsPending(): void;
  pinResetRequested(): void;
}

export interface RateLimiter {
  /** Count one hit on `key`; throws 429 `rate_limited` (or `code`) with Retry-After past `limit` per `windowMs`. */
  hit(key: string, limit: number, windowMs: number, code?: string): Promise<void>;
  /** Like hit, but only checks (does not count). */
  check(key: string, limit: number, windowMs: number, code?: string): Promise<void>;
}

/** Real-time fan-out to /stream subscribers (SSE event names from the contract). */
export interface EventBus {
  publish(event: string, data: Record<string, unknown>, opts?: { hostsOnly?: boolean }): void;
  subscribe(fn: (event: string, data: Record<string, unknown>, hostsOnly: boolean) => void): () => void;
}

export interface DiskProbe {
  /** Free and total bytes of the filesystem holding DATA_DIR (tests inject fixed numbers). */
  stat(): Promise<{ free_bytes: number; total_bytes: number }>;
}

/**
 * A background loop owned by one module. app.ts starts every worker once the server is listening
 * (or when a test calls `startWorkers()`), and awaits `stop()` in `close()` before the database
 * closes.
 */
export interface BackgroundWorker {
  name: string;
  start(): void;
  stop(): Promise<void>;
}
