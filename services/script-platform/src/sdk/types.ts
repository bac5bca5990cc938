import type { Clock } from "@app/kit/clock";
import type { Database, Kysely } from "@app/kit/db";
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
  /** Where data writes and publishDurable emit trigger events (dispatch/change-events.ts). */
  events: EventSink;
}

/** A kv/docs/files write as triggers see it. */
export interface ChangeEvent {
  appId: string;
  kind: "kv" | "docs" | "files";
  collection: string;
  operation: "set" | "delete" | "create" | "update";
  /** The ctx.event.<kind> payload a triggered script sees (docs: includes prev_data; files: metadata only). */
  payload: Record<string, unknown>;
  /** Trigger chain depth of the execution that made the write (0 for HTTP). */
  depth: number;
}

export interface PubsubMessage {
  appId: string;
  topic: string;
  /** Already JSON-safe (blobs base64-encoded at any depth). */
  message: unknown;
  depth: number;
}

/**
 * Trigger events of a write, called INSIDE the write's transaction so the outbox rows commit
 * with the data or not at all. Each returns how many outbox rows it wrote.
 */
export interface EventSink {
  change(trx: Kysely<PlatformDB>, event: ChangeEvent): Promise<number>;
  pubsub(trx: Kysely<PlatformDB>, message: PubsubMessage): Promise<number>;
  /** publishDurable: `pubsub` in a transaction of its own, which concurrent publishes share. */
  publish(message: PubsubMessage): Promise<number>;
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
