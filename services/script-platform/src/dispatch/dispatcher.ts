import { type Clock, type TimerHandle, toIso } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { newId } from "@app/kit/ids";
import type { Logger } from "@app/kit/logger";
import type { ScriptRecord } from "../control/scripts-repo.js";
import type { PlatformDB } from "../db/schema.js";
import { type PrincipalJson, principalFromJson } from "../triggers/principal.js";
import { handlerRunFailed } from "./dead-letters.js";
import type { LocalRuns } from "./enqueue.js";
import { OUTBOX_CHANNEL } from "./enqueue-repo.js";
import type { FailurePolicy } from "./failure-policy.js";
import type { Inbox } from "./inbox.js";
import type { ExecutionLog, Finished, Job, JobRunner, RequestView } from "./job.js";
import {
  decodeHttpRequest,
  GroupCommit,
  type HttpPayload,
  LEASE_MS,
  type OutboxRow,
  outboxRepo,
} from "./outbox.js";

export interface DispatcherDeps {
  database: Database<PlatformDB>;
  clock: Clock;
  logger: Logger;
  /** Runs a job (execution/executor.ts). */
  executor: JobRunner;
  /** Where each finished run is recorded, in the settling transaction. */
  executions: ExecutionLog;
  /** Retry / dead letter / drop for a failed trigger or async row. */
  failures: FailurePolicy;
  inbox: Inbox;
  instanceId: string;
  /** PLATFORM_MAX_CONCURRENCY: scripts running at once in this process. */
  maxConcurrency: number;
  /** Poll interval for rows nobody announced (cron, retries coming due, other processes). */
  pollMs?: number;
  /**
   * How long a sync request's run waits for a slot of its app before failing as busy (503), and
   * how long a sync request finding all of maxConcurrency taken waits for one of those.
   */
  syncWaitMs?: number;
  /** Of maxConcurrency, the slots background runs may not take (default: a quarter, rounded down). */
  syncSlots?: number;
}

const CLAIM_BATCH = 32;
/**
 * While this many runs are in flight, a claim waits until as many slots are free: under a
 * backlog every finishing run would otherwise claim its one replacement (a statement, and a
 * script read, per run on PostgreSQL). A deferred claim still happens within CLAIM_DEFER_MS.
 */
const CLAIM_MIN = 8;
const CLAIM_DEFER_MS = 10;
/** Share of PLATFORM_MAX_CONCURRENCY kept for sync requests by default (rounded down: none below 4 slots). */
const SYNC_SHARE = 0.25;

/** A sync request's row as its own process holds it: the decoded request behind row.payload. */
export interface OwnRequest {
  request: RequestView;
  requestId: string | null;
  /** `request` as the row's payload spelled it (JSON text), when it holds no bytes. */
  requestJson?: string | null;
}

/** outbox.payload and outbox.principal are JSON text on both backends (see migration 0002). */
function jsonText<T>(v: unknown): T {
  return (typeof v === "string" ? JSON.parse(v) : v) as T;
}

/**
 * The outbox dispatcher: claims due rows, runs their scripts with at most maxConcurrency at once,
 * hands sync results to the waiting inbox, and settles each row (deleted on success or for reply
 * rows; failed trigger/async rows go to the failure policy: retry, dead letter or drop).
 * Wakes on its poll timer, at once when this process enqueues, and on NOTIFY from others.
 */
export function createDispatcher(deps: DispatcherDeps) {
  const { database, clock, logger, executor, executions, failures, inbox, instanceId } = deps;
  const repo = outboxRepo(database, clock);
  const commits = new GroupCommit(database);
  const inflight = new Set<Promise<void>>();
  let running = 0;
  /**
   * Slots the claim in flight may fill, not counted in `running` until it returns. A sync request
   * arriving meanwhile takes one of them (it is waited on; a backlog row is not), and the claim
   * gives back the rows it got beyond the slots it still has.
   */
  let claiming = 0;
  /**
   * Of `running`, the runs nobody waits for (claimed rows, triggered runs written claimed). They
   * may hold at most `backgroundMax` slots: the rest stay for sync requests, whose caller waits.
   * Without that, a steady backlog of triggered runs held every slot and each sync request
   * queued behind the whole backlog (bench mixed step: the hello route fell from ~5,000 to
   * 53-64 req/s, p99 0.8-1.1 s).
   */
  let background = 0;
  const backgroundMax = Math.max(
    1,
    deps.maxConcurrency - (deps.syncSlots ?? Math.floor(deps.maxConcurrency * SYNC_SHARE)),
  );
  const free = () => deps.maxConcurrency - running - claiming;
  /**
   * Sync requests waiting for a slot, oldest first: a slot that frees goes to them before any
   * claim (their caller waits; a backlog row does not). See submitOwn.
   */
  const slotWaiters: { grant(): void; refuse(): void }[] = [];
  /** Give free slots to waiting sync requests; true when one was left free for a claim. */
  const handOff = (): boolean => {
    while (slotWaiters.length > 0 && free() > 0) {
      running++;
      slotWaiters.shift()?.grant();
    }
    return free() > 0;
  };
  /** Slots a claim or the outbox writer may take for background runs now. */
  const freeForBackground = () => Math.min(free(), backgroundMax - background - claiming);
  let stopped = true;
  let ticking: Promise<void> | null = null;
  /** Whether due rows may be waiting for a free slot (set by every wake-up, cleared by a short claim). */
  let backlog = true;
  let again = false;
  let poll: TimerHandle | null = null;
  /** Aborted on stop: in-flight runs end at once (their rows are settled as failures). */
  let shutdown = new AbortController();
  let unsubscribe: (() => Promise<void>) | null = null;
  /** Slots a claim waits for while at least as many runs are in flight (small pools: 1). */
  const claimMin = Math.max(1, Math.min(CLAIM_MIN, Math.floor(deps.maxConcurrency / 4)));
  /** The claim a deferral promised (a free slot is used within CLAIM_DEFER_MS at the latest). */
  let deferred: TimerHandle | null = null;
  let force = false;

  const toJob = (row: OutboxRow, own?: OwnRequest): Job => {
    // This process's own sync request: the request as the route decoded it (the row's payload is
    // its JSON text, byte for byte), not parsed back from that text.
    if (own)
      return {
        executionId: row.execution_id ?? newId(),
        appId: row.app_id,
        scriptId: row.script_id,
        invocationType: row.source_kind,
        requestId: own.requestId,
        request: own.request,
        requestJson: own.requestJson ?? null,
        event: null,
        principal: row.principal ? principalFromJson(jsonText<PrincipalJson>(row.principal)) : null,
        depth: row.depth,
      };
    const payload = (jsonText<Record<string, unknown>>(row.payload) ?? {}) as Partial<HttpPayload> & {
      event?: unknown;
    };
    const principal = row.principal ? principalFromJson(jsonText<PrincipalJson>(row.principal)) : null;
    return {
      // A retry is a new execution; the first attempt keeps the id announced at enqueue time.
      executionId: row.attempts === 0 && row.execution_id ? row.execution_id : newId(),
      appId: row.app_id,
      scriptId: row.script_id,
      invocationType: row.source_kind,
      requestId: payload.request_id ?? null,
      request: row.source_kind === "http" && payload.request ? decodeHttpRequest(payload.request) : null,
      event: payload.event ?? null,
      principal,
      depth: row.depth,
    };
  };

  const settle = (row: OutboxRow, job: Job, finished: Finished, delivered: boolean) => {
    const o = finished.outcome;
    // The common case (recorded, row deleted, answer delivered) merges with the batch's other
    // settles: one multi-row statement per table in one commit.
    if ((o.ok || row.reply_to) && (!row.reply_to || delivered))
      return commits.write(executions.settleWrite(finished.record, row.id));
    return commits.run(async (trx) => {
      await executions.insert(trx, finished.record);
      if (!o.ok && !row.reply_to && o.kind !== "script_not_found") {
        const decision = await failures.onRunFailed(trx, {
          outboxId: row.id,
          appId: row.app_id,
          triggerId: row.trigger_id,
          scriptId: row.script_id,
          attempts: row.attempts + 1,
          error: { kind: o.kind, message: o.message },
          executionId: job.executionId,
        });
        if (decision === "retry") await repo.release(trx, row.id);
        else await repo.delete(trx, row.id);
      } else {
        // A dead_letter handler whose script is gone did not handle its dead letter: without
        // this, its vanished row would count as a success (handled_by_script).
        if (!o.ok && o.kind === "script_not_found" && row.source_kind === "dead_letter")
          await handlerRunFailed(trx, row.id, clock.iso());
        await repo.delete(trx, row.id);
      }
      if (row.reply_to && !delivered)
        await repo.abandoned(trx, {
          id: newId(),
          app_id: row.app_id,
          script_id: row.script_id,
          execution_id: job.executionId,
          reply_to: row.reply_to,
          status: finished.record.status,
          result: o.ok ? { value: o.value } : { error: { kind: o.kind, message: o.message } },
        });
    });
  };

  const runRow = async (row: OutboxRow, script?: ScriptRecord, own?: OwnRequest): Promise<void> => {
    const job: Job = {
      ...toJob(row, own),
      script: script ?? null,
      ...(row.reply_to && deps.syncWaitMs !== undefined ? { waitMs: deps.syncWaitMs } : {}),
    };
    let finished: Finished;
    try {
      finished = await executor.run(job, shutdown.signal);
    } catch (err) {
      logger.error({ err, outbox_id: row.id }, "execution failed in the host");
      const now = clock.iso();
      finished = {
        outcome: { ok: false, kind: "internal_error", message: "The script could not be run." },
        record: {
          id: job.executionId,
          app_id: row.app_id,
          script_id: row.script_id,
          invocation_type: job.invocationType,
          status: "failed",
          duration_ms: 0,
          logs: [],
          error: {
            code: "internal_error",
            message: "The script could not be run.",
            stack: null,
            line: null,
            column: null,
          },
          instance_id: instanceId,
          created_at: now,
          finished_at: now,
        },
      };
    }
    // The waiting request gets its answer first; the row settles in the next group commit.
    const delivered = row.reply_to ? inbox.deliver(row.reply_to, finished.outcome) : true;
    await settle(row, job, finished, delivered);
  };

  const start = (row: OutboxRow, script?: ScriptRecord, own?: OwnRequest, sync = false) => {
    const p: Promise<void> = runRow(row, script, own)
      .catch((err) =>
        logger.error({ err, outbox_id: row.id }, "settling an outbox row failed; its lease will expire"),
      )
      .finally(() => {
        running--;
        if (!sync) background--;
        inflight.delete(p);
        // A freed slot goes to a waiting sync request first; else it only needs a claim when rows
        // may be waiting for one.
        if (handOff() && backlog) wake();
      });
    inflight.add(p);
  };

  /**
   * Rows this process holds and will not run after all (it is stopping): anyone's again at once,
   * not after their lease; other processes hear of them. Awaited by idle() (stop waits for it).
   */
  const giveBack = (rows: readonly OutboxRow[]) => {
    running -= rows.length;
    background -= rows.length;
    handOff();
    const p: Promise<void> = repo
      .giveBack(
        database.db,
        instanceId,
        rows.map((r) => r.id),
      )
      .then(
        () => {
          if (database.backend === "postgres") return database.notifier.publish(OUTBOX_CHANNEL, "");
        },
        (err) =>
          logger.error(
            { err, count: rows.length },
            "giving back outbox rows failed; their lease will expire",
          ),
      )
      .catch((err) => logger.warn({ err }, "outbox notify failed"))
      .finally(() => inflight.delete(p));
    inflight.add(p);
  };

  /** Start rows claimed by this process (their slots are counted in `running`), unless stopping. */
  const begin = (rows: readonly OutboxRow[], scripts: ReadonlyMap<string, ScriptRecord> | null) => {
    // A run started now would only end as a shutdown failure (an attempt spent, maybe a dead letter).
    if (stopped) return giveBack(rows);
    for (const row of rows) start(row, scripts?.get(row.script_id));
  };

  const tick = async () => {
    try {
      do {
        again = false;
        const want = Math.min(freeForBackground(), CLAIM_BATCH);
        if (want <= 0 || stopped) {
          backlog = true;
          break;
        }
        if (want < claimMin && background >= claimMin && !force) {
          // Enough runs in flight: their ends bring more free slots; the timer bounds the wait.
          backlog = true;
          deferred ??= clock.setTimeout(() => {
            deferred = null;
            force = true;
            wake();
          }, CLAIM_DEFER_MS);
          break;
        }
        force = false;
        deferred?.cancel();
        deferred = null;
        claiming = want;
        let rows: OutboxRow[] = [];
        let slots = 0;
        try {
          // One statement, its own transaction (outbox-repo.ts claim).
          rows = await repo.claim(database.db, instanceId, want);
        } finally {
          // What is free now: sync requests may have taken some of the claim's slots, runs may have ended.
          slots = Math.max(
            0,
            Math.min(deps.maxConcurrency - running - slotWaiters.length, backgroundMax - background),
          );
          claiming = 0;
          running += rows.length;
          background += rows.length;
        }
        const got = rows.length;
        if (got > slots) {
          // The rows beyond the free slots are anyone's again at once.
          giveBack(rows.slice(slots));
          rows = rows.slice(0, slots);
        }
        handOff(); // slots the claim left free go to sync requests that waited meanwhile
        // The claim's scripts in one read (per run it was one statement each). A failed read only
        // costs speed: each run then reads its own script.
        let scripts: Map<string, ScriptRecord> | null = null;
        if (rows.length > 0)
          try {
            scripts = await executor.scripts(rows.map((r) => r.script_id));
          } catch (err) {
            logger.warn({ err }, "reading the claimed rows' scripts failed; each run reads its own");
          }
        begin(rows, scripts);
        backlog = got === want;
        if (backlog) again = true;
      } while (again && !stopped);
    } catch (err) {
      logger.error({ err }, "outbox claim failed");
    }
  };

  function wake(): void {
    if (stopped) return;
    backlog = true;
    if (ticking) {
      again = true;
      return;
    }
    // tick() may finish synchronously (no free slot): clear the marker only for this tick.
    const p = tick();
    ticking = p;
    void p.then(() => {
      if (ticking !== p) return;
      ticking = null;
      if (again) wake(); // a wake-up that arrived as the tick was finishing
    });
  }

  /** Announce rows this process wrote: wake here now, and other processes via NOTIFY. */
  const enqueued = (): void => {
    wake();
    if (database.backend === "postgres")
      void database.notifier
        .publish(OUTBOX_CHANNEL, "")
        .catch((err) => logger.warn({ err }, "outbox notify failed"));
  };
  /**
   * Slots the outbox writer took (local.reserve) whose rows are neither started nor given back
   * yet: their write is in flight. stop() waits for them, so every row written claimed by this
   * process is started or given back before it stops, never left to its lease.
   */
  let reserved = 0;
  let reservedDone: { promise: Promise<void>; resolve: () => void } | null = null;
  const settleReserved = (n: number) => {
    reserved -= n;
    if (reserved > 0 || !reservedDone) return;
    reservedDone.resolve();
    reservedDone = null;
  };

  /**
   * How long a sync request finding every slot taken waits here for one (a run ends every few
   * milliseconds under load) before its row goes in unclaimed, for whichever process claims it.
   */
  const syncSlotWaitMs = deps.syncWaitMs ?? 0;
  /** Wait for a slot (counted in `running` when it resolves true); false when the wait ran out or the dispatcher stopped. */
  const waitForSlot = () =>
    new Promise<boolean>((resolve) => {
      const waiter = {
        grant: () => {
          timer.cancel();
          resolve(true);
        },
        refuse: () => {
          timer.cancel();
          const i = slotWaiters.indexOf(waiter);
          if (i >= 0) slotWaiters.splice(i, 1);
          resolve(false);
        },
      };
      const timer = clock.setTimeout(waiter.refuse, syncSlotWaitMs);
      slotWaiters.push(waiter);
    });

  /** Resolves when nothing is running (tests, shutdown). */
  const idle = async (): Promise<void> => {
    while (inflight.size > 0 || ticking || reserved > 0) {
      if (reserved > 0 && !reservedDone) {
        let resolve = () => {};
        const promise = new Promise<void>((r) => {
          resolve = r;
        });
        reservedDone = { promise, resolve };
      }
      await Promise.allSettled([...inflight, ticking, reservedDone?.promise]);
    }
  };

  /** Runs the outbox writer hands over as it writes them (enqueue.ts LocalRuns). */
  const local: LocalRuns = {
    instanceId,
    reserve(n) {
      if (stopped) return 0;
      const k = Math.max(0, Math.min(n, freeForBackground()));
      running += k;
      background += k;
      reserved += k;
      return k;
    },
    unreserve(n) {
      running -= n;
      background -= n;
      settleReserved(n);
      if (handOff() && backlog) wake();
    },
    start(rows, scripts) {
      settleReserved(rows.length);
      begin(rows, scripts);
    },
  };

  return {
    name: "dispatcher",
    wake,
    local,
    enqueued,
    idle,
    /** Group-commit counters (transactions, items committed, failed transactions): tests, metrics. */
    commitStats: commits.stats,
    /**
     * Run a sync request's row here at once when a slot is free (counting those a claim in flight
     * has not filled yet, and those background runs may not take): it is inserted already claimed
     * by this process (one commit, no polling delay) and runs once COMMITTED, without waiting for
     * the commit to be durable: a reply row is never retried (seed: reply_to means do not retry),
     * so its fsync protects nothing a caller could observe, and the script's own durable writes,
     * and the settle after it, come later in the WAL, so their syncs cover the row. Otherwise it
     * waits up to syncWaitMs for the next slot to free (before any claim), and after that is
     * inserted unclaimed (durable) for the next claim of any process.
     */
    async submitOwn(row: OutboxRow, script?: ScriptRecord, own?: OwnRequest): Promise<void> {
      let slot = false;
      if (!stopped && running < deps.maxConcurrency) {
        if (free() <= 0) claiming--; // a slot the claim in flight had not filled yet
        running++;
        slot = true;
      } else if (!stopped && syncSlotWaitMs > 0) slot = await waitForSlot();
      if (slot) {
        const claimed = { ...row, claimed_by: instanceId, lease_until: toIso(clock.now() + LEASE_MS) };
        try {
          await commits.writeCommitted(repo.insertWrite(claimed));
        } catch (err) {
          running--;
          if (handOff() && backlog) wake();
          throw err;
        }
        start(claimed, script, own, true);
        return;
      }
      await commits.write(repo.insertWrite(row));
      wake();
    },
    /** Insert a row for later (async HTTP) and wake the dispatchers. */
    async submit(row: OutboxRow): Promise<void> {
      await commits.write(repo.insertWrite(row));
      enqueued();
    },
    get running() {
      return running;
    },
    async start() {
      stopped = false;
      shutdown = new AbortController();
      poll = clock.setInterval(wake, deps.pollMs ?? 1000);
      if (database.backend === "postgres")
        unsubscribe = await database.notifier.subscribe(OUTBOX_CHANNEL, wake);
      wake();
    },
    async stop() {
      stopped = true;
      for (const w of [...slotWaiters]) w.refuse();
      poll?.cancel();
      deferred?.cancel();
      deferred = null;
      await unsubscribe?.();
      shutdown.abort();
      await idle();
    },
  };
}
export type Dispatcher = ReturnType<typeof createDispatcher>;
