import type { Kysely } from "kysely";
import type { PlatformDB } from "../db/schema.js";

/**
 * Seam between the SDK's data writes (platform-runtime helper) and triggers (platform-triggers
 * helper, who owns this file). Called INSIDE the data write's transaction so the outbox rows
 * commit with the data or not at all. Returns how many outbox rows were written.
 */
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

export async function emitChangeEvent(_trx: Kysely<PlatformDB>, _event: ChangeEvent): Promise<number> {
  return 0; // no triggers yet: the platform-triggers helper replaces this
}

export interface PubsubMessage {
  appId: string;
  topic: string;
  /** Already JSON-safe (blobs base64-encoded at any depth). */
  message: unknown;
  depth: number;
}

/** One outbox row per matching enabled pubsub trigger; no match is a silent success. */
export async function emitPubsub(_trx: Kysely<PlatformDB>, _msg: PubsubMessage): Promise<number> {
  return 0; // no triggers yet: the platform-triggers helper replaces this
}
