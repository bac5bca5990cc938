import type { Kysely } from "@app/kit/db";
import type { Principal } from "../control/scopes.js";
import type { ScriptRecord } from "../control/scripts-repository.js";
import type { PlatformDB } from "../db/schema.js";
import type { ErrorDetail, FailureKind, LogEntry } from "../sandbox/engine.js";
import type { MergedWrite } from "./group-commit.js";

/**
 * The contract between the dispatcher and whatever runs a job (execution/executor.ts). It lives
 * here so dispatch/ depends on no module of execution/: the execution side implements it.
 */

/** ctx.request as a script sees it. */
export interface RequestView {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
  params: Record<string, string>;
  query: Record<string, string>;
  rest: string;
}

/** One run to perform (built by the dispatcher from an outbox row). */
export interface Job {
  executionId: string;
  appId: string;
  scriptId: string;
  /** http, or the event source kind (kv, docs, files, pubsub, cron, email, dead_letter). */
  invocationType: string;
  requestId: string | null;
  request: RequestView | null;
  /**
   * `request` as JSON text when it holds no bytes (a sync request's row payload already made it):
   * the run's ctx then crosses to the worker as one string, not an object graph to clone.
   */
  requestJson?: string | null;
  event: unknown;
  principal: Principal | null;
  depth: number;
  /** The script as the request already loaded it (sync requests run in this process); else loaded here. */
  script?: ScriptRecord | null;
  /** How long the run may wait for a slot of its app before failing as busy (sync requests); default unbounded. */
  waitMs?: number;
  /** Called once when the run first waits on I/O (parked runs hold no dispatcher slot). */
  onPark?: () => void;
}

export type JobOutcome =
  | { ok: true; value: unknown }
  | { ok: false; kind: FailureKind | "script_not_found"; message: string; detail?: ErrorDetail };

/**
 * A failed run's error as records and draft runs carry it (contract "Authoring"): `line` and
 * `column` are 1-based in the script's own source. Public callers never see `stack`.
 */
export interface RunError {
  code: string;
  message: string;
  stack: string | null;
  line: number | null;
  column: number | null;
}

export interface ExecutionRecord {
  id: string;
  app_id: string;
  script_id: string;
  invocation_type: string;
  status: "succeeded" | "failed";
  duration_ms: number;
  logs: LogEntry[];
  error: RunError | null;
  /** The process that ran it (scale-out: which instance claimed the row). */
  instance_id: string | null;
  created_at: string;
  finished_at: string;
}

export interface Finished {
  outcome: JobOutcome;
  record: ExecutionRecord;
}

/** Runs one job; never throws for a script's failure. */
export interface JobRunner {
  run(job: Job, signal?: AbortSignal): Promise<Finished>;
  /** The scripts of a claimed batch by id, read at once (`Job.script`); unknown ids are absent. */
  scripts(ids: readonly string[]): Promise<Map<string, ScriptRecord>>;
}

/** Where the dispatcher writes each finished run, inside its settling transaction. */
export interface ExecutionLog {
  insert(trx: Kysely<PlatformDB>, record: ExecutionRecord): Promise<void>;
  /** The same insert as a group-commit write, merged with the batch's other records. */
  insertWrite(record: ExecutionRecord): MergedWrite;
  /** Record in, outbox row `outboxId` out: one group-commit write (one statement on PostgreSQL). */
  settleWrite(record: ExecutionRecord, outboxId: string): MergedWrite;
}
