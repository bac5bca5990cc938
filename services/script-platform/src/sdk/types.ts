import type { Clock } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import type { Logger } from "@app/kit/logger";
import type { Principal } from "../control/scopes.js";
import type { SecretBox } from "../crypto/secret-box.js";
import type { PlatformDB } from "../db/schema.js";
import type { OutboundHttp } from "./http.js";

/** What the SDK needs from the platform (a narrow slice of PlatformContext, easy to build in tests). */
export interface SdkDeps {
  database: Database<PlatformDB>;
  clock: Clock;
  logger: Logger;
  secretBox: SecretBox;
  /** PLATFORM_FILES_ROOT. */
  filesRoot: string;
  /** PLATFORM_SECRET_MAX_VALUE_BYTES. */
  secretMaxBytes: number;
  http: OutboundHttp;
  /** Subscriber token lifetime in seconds (PLATFORM_SUBSCRIBER_TOKEN_*); absent: 3600 within 60..604800. */
  tokenTtl?: { default: number; min: number; max: number };
  /** Called after a write committed outbox rows (trigger events), to wake the dispatcher. */
  onEnqueued?: () => void;
}

/** The calling context of one execution: isolation and permission come only from here. */
export interface SdkCall {
  appId: string;
  scriptId: string;
  executionId: string;
  /** Null for public HTTP (no capability check). */
  principal: Principal | null;
  /** Trigger chain depth of this execution (0 for HTTP). */
  depth: number;
}
