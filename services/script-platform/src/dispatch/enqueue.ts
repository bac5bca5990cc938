import { toIso } from "@app/kit/clock";
import type { Dialect, Kysely } from "@app/kit/db";
import { newId } from "@app/kit/ids";
import type { ScriptRecord } from "../control/scripts-repository.js";
import type { PlatformDB } from "../db/schema.js";
import {
  insertOutboxRows,
  insertOutboxRowsAndNotify,
  type NewOutboxRow,
  notifyOutbox,
} from "./enqueue-repository.js";
import type { OutboxRow } from "./outbox-repository.js";

/**
 * A triggered run to write to the outbox. Every row runs its script as the principal that
 * registered the trigger (seed: "the dispatcher runs the script as that principal").
 */
export interface TriggeredRun {
  appId: string;
  sourceKind: "kv" | "docs" | "files" | "pubsub" | "cron" | "email" | "dead_letter";
  triggerId: string;
  scriptId: string;
  /** ctx.event as the script sees it, e.g. `{kv: {...}}`. */
  event: Record<string, unknown>;
  depth: number;
  principal: unknown;
  /** The principal already as JSON text (read as text from the trigger row): written as it is. */
  principalJson?: string;
  dueAt: string;
  now: string;
  /** The run's script as the write read it: lets this process start the run itself (LocalRuns). */
  script?: ScriptRecord | null;
}

/**
 * This process's dispatcher as the writer sees it: runs it has free slots for are written already
 * claimed by it and started once their write committed, as a sync request's own row is: no
 * NOTIFY or wake-up, claim or script read for them. Other processes still take every row this one
 * has no slot for, and a claimed row whose process dies is taken again when its lease runs out.
 */
export interface LocalRuns {
  instanceId: string;
  /** How long a claim holds before another process may take it over (renewed by the heartbeat). */
  leaseMs: number;
  /** Takes up to `n` free run slots (0 when stopped or full); start or unreserve gives each back. */
  reserve(n: number): number;
  /**
   * Starts rows written already claimed by this instance (the write has committed), one reserved
   * slot each; rows it will not run (it is stopping) it gives back at once. Never throws.
   */
  start(rows: readonly OutboxRow[], scripts: ReadonlyMap<string, ScriptRecord>): void;
  unreserve(n: number): void;
}

export type OwnRuns = ReturnType<typeof createOwnRuns>;

/**
 * Rows a transaction wrote claimed by this process: `start` once it committed, `drop` when it did
 * not (its slots are freed). Each acts once; whichever comes first wins.
 */
export function createOwnRuns(deps: {
  local: LocalRuns;
  rows: readonly OutboxRow[];
  scripts: ReadonlyMap<string, ScriptRecord>;
}) {
  const { local, rows, scripts } = deps;
  let done = false;
  return {
    rows,
    start(): void {
      if (done) return;
      done = true;
      local.start(rows, scripts);
    },
    drop(): void {
      if (done) return;
      done = true;
      local.unreserve(rows.length);
    },
  };
}

/** Writes outbox rows inside the caller's transaction and tells dispatchers about them. */
export interface OutboxWriter {
  /** Writes a triggered run's row and announces it; returns the row id. */
  enqueue(trx: Kysely<PlatformDB>, run: TriggeredRun): Promise<string>;
  /**
   * Writes many triggered runs' rows in one statement and announces them once; returns their ids.
   * On PostgreSQL up to 500 rows and their NOTIFY are one statement, so `trx` may then be the
   * database itself (no transaction): the write is still all or nothing.
   */
  enqueueMany(trx: Kysely<PlatformDB>, runs: readonly TriggeredRun[]): Promise<string[]>;
  /**
   * enqueueMany, but the runs this process has free slots for (and that are due now) are written
   * claimed by it: the caller starts them once `trx` committed (OwnRuns' start) or drops them if it
   * did not (`hold` hands them over before the write). `scriptsOf` reads the scripts such runs lack (one read for the batch). Null when no
   * run is this process's own. On PostgreSQL `trx` may be the database itself (see enqueueMany).
   */
  enqueueOwn(
    trx: Kysely<PlatformDB>,
    runs: readonly TriggeredRun[],
    scriptsOf: (ids: readonly string[]) => Promise<ReadonlyMap<string, ScriptRecord>>,
    /** Gets the own runs before their rows are written: whatever fails later, the caller can drop them. */
    hold?: (own: OwnRuns) => void,
  ): Promise<OwnRuns | null>;
  /** Writes a row as given (a dead letter's replay) and announces it. */
  insert(trx: Kysely<PlatformDB>, row: NewOutboxRow): Promise<void>;
}

/**
 * One per app instance: `dialect` is its database's, `wake` its own dispatcher's wake-up. On
 * PostgreSQL a NOTIFY inside the transaction reaches every instance at commit (repeats in one
 * transaction collapse into one). On SQLite this process's dispatcher is woken; its claim
 * transaction queues behind the writer's, so it sees the row once committed.
 */
export function createOutboxWriter(deps: {
  dialect: Dialect;
  wake: () => void;
  /** This process's dispatcher, once it exists (see LocalRuns). */
  local?: () => LocalRuns | null;
}): OutboxWriter {
  const { dialect, wake } = deps;
  // One announcement per transaction: repeated NOTIFYs collapse at commit anyway, and each
  // would cost a round trip (a batch of publishes writes many rows in one transaction).
  const announced = new WeakSet<Kysely<PlatformDB>>();
  const insertWithNotify = insertOutboxRowsAndNotify();
  // Outside a transaction (PostgreSQL, `trx` the database itself) each write announces its rows.
  const announce = async (trx: Kysely<PlatformDB>) => {
    if (announced.has(trx)) return;
    if (dialect.inTransaction(trx)) announced.add(trx);
    if (dialect.sharedByProcesses) await notifyOutbox(trx);
    else wake();
  };
  const toRow = (run: TriggeredRun): NewOutboxRow => ({
    id: newId(),
    app_id: run.appId,
    source_kind: run.sourceKind,
    trigger_id: run.triggerId,
    script_id: run.scriptId,
    payload: dialect.json({ event: run.event }),
    due_at: run.dueAt,
    depth: run.depth,
    principal:
      run.principalJson ??
      (run.principal === null || run.principal === undefined ? null : dialect.json(run.principal)),
    created_at: run.now,
    claimed_by: null,
    lease_until: null,
  });
  /** Writes `rows` (those of `own` claimed by this process) and announces the others. */
  const write = async (trx: Kysely<PlatformDB>, rows: readonly NewOutboxRow[], own: number) => {
    if (dialect.sharedByProcesses && !announced.has(trx) && rows.length <= 500) {
      // The common case (a publish batch): rows and announcement in one statement; no
      // announcement when every row is this process's own.
      await insertWithNotify(trx, rows, own < rows.length);
      if (dialect.inTransaction(trx) && own < rows.length) announced.add(trx);
      return;
    }
    await insertOutboxRows(trx, rows);
    if (own < rows.length) await announce(trx);
  };
  const writer: OutboxWriter = {
    async enqueue(trx, run) {
      const [id = ""] = await writer.enqueueMany(trx, [run]);
      return id;
    },
    async enqueueMany(trx, runs) {
      if (runs.length === 0) return [];
      const rows = runs.map(toRow);
      await write(trx, rows, 0);
      return rows.map((r) => r.id);
    },
    async enqueueOwn(trx, runs, scriptsOf, hold) {
      if (runs.length === 0) return null;
      const rows = runs.map(toRow);
      const local = deps.local?.() ?? null;
      // Only rows due now: a row due later waits for its time in the outbox, held by nobody.
      const due = local ? runs.flatMap((r, i) => (Date.parse(r.dueAt) <= Date.parse(r.now) ? [i] : [])) : [];
      const own = local && due.length > 0 ? local.reserve(due.length) : 0;
      if (!local || own === 0) {
        await write(trx, rows, 0);
        return null;
      }
      const mine = due.slice(0, own);
      const missing = [...new Set(mine.flatMap((i) => (runs[i]?.script ? [] : [runs[i]?.scriptId ?? ""])))];
      let read: ReadonlyMap<string, ScriptRecord> = new Map();
      try {
        if (missing.length > 0) read = await scriptsOf(missing);
      } catch (err) {
        local.unreserve(own);
        throw err;
      }
      const claimed: OutboxRow[] = [];
      const scripts = new Map<string, ScriptRecord>();
      for (const i of mine) {
        const run = runs[i] as TriggeredRun;
        const row = rows[i] as NewOutboxRow;
        const script = run.script ?? read.get(run.scriptId);
        if (script) scripts.set(run.scriptId, script);
        row.claimed_by = local.instanceId;
        row.lease_until = toIso(Date.parse(run.now) + local.leaseMs);
        claimed.push({
          ...row,
          execution_id: null,
          attempts: 0,
          reply_to: null,
          claimed_by: local.instanceId,
          lease_until: row.lease_until,
        });
      }
      const handle = createOwnRuns({ local, rows: claimed, scripts });
      hold?.(handle);
      try {
        await write(trx, rows, own);
      } catch (err) {
        handle.drop();
        throw err;
      }
      return handle;
    },
    async insert(trx, row) {
      await insertOutboxRows(trx, [row]);
      await announce(trx);
    },
  };
  return writer;
}
