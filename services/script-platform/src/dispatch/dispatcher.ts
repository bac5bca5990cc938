import { type Clock, type TimerHandle, toIso } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { newId } from "@app/kit/ids";
import type { Logger } from "@app/kit/logger";
import type { ScriptRecord } from "../control/scripts-repository.js";
import type { PlatformDB } from "../db/schema.js";
import { type PrincipalJson, principalFromJson } from "../triggers/principal.js";
import { handlerRunFailed } from "./dead-letters.js";
import type { LocalRuns } from "./enqueue.js";
import { OUTBOX_CHANNEL } from "./enqueue-repository.js";
import type { FailurePolicy } from "./failure-policy.js";
import type { Inbox } from "./inbox.js";
import type { ExecutionLog, Finished, Job, JobRunner, RequestView } from "./job.js";
import {
  createGroupCommit,
  decodeHttpRequest,
  type HttpPayload,
  LEASE_MS,
  type OutboxRow,
  outboxRepo,
} from "./outbox.js";
import { type ClaimResult, type Freed, SlotScheduler } from "./scheduler.js";

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
  /**
   * PLATFORM_CLAIM_TAKEOVER_S: a claim's lease, renewed every `heartbeatMs` (PLATFORM_CLAIM_HEARTBEAT_S)
   * while this process lives; rows of a process that stopped renewing are claimable once it ran out.
   * Unset: the run ceiling's lease, no heartbeat.
   */
  leaseMs?: number;
  heartbeatMs?: number;
}

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

/** A run's dispatcher slot, released once: when the run first parks, or when it ends. */
class SlotHold {
  private holding = true;
  constructor(
    private readonly slots: SlotScheduler,
    private readonly onFreed: (f: Freed) => void,
    private readonly sync: boolean,
  ) {}
  release(): void {
    if (!this.holding) return;
    this.holding = false;
    this.onFreed(this.slots.runEnded(this.sync));
  }
}

/** The job of a claimed row: request or event decoded from its payload. */
function payloadJob(
  row: OutboxRow,
  principal: Job["principal"],
  script: ScriptRecord | undefined,
  onPark: () => void,
): Job {
  const payload = (jsonText<Record<string, unknown>>(row.payload) ?? {}) as Partial<HttpPayload> & {
    event?: unknown;
  };
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
    script: script ?? null,
    onPark,
  };
}

/**
 * The outbox dispatcher: claims due rows, runs their scripts with at most maxConcurrency at once,
 * hands sync results to the waiting inbox, and settles each row (deleted on success or for reply
 * rows; failed trigger/async rows go to the failure policy: retry, dead letter or drop).
 * Wakes on its poll timer, at once when this process enqueues, and on NOTIFY from others.
 */
export function createDispatcher(deps: DispatcherDeps) {
  const { database, clock, logger, executor, executions, failures, inbox, instanceId } = deps;
  const leaseMs = deps.leaseMs ?? LEASE_MS;
  const repo = outboxRepo(database, clock, leaseMs);
  let heartbeat: TimerHandle | null = null;
  const commits = createGroupCommit({ database });
  const inflight = new Set<Promise<void>>();
  /** The slot policy (scheduler.ts); this closure does the I/O its decisions call for. */
  const slots = new SlotScheduler({
    max: deps.maxConcurrency,
    syncWaitMs: deps.syncWaitMs,
    ...(deps.syncSlots !== undefined ? { syncSlots: deps.syncSlots } : {}),
  });
  /** Sync requests waiting for a slot, by the scheduler's waiter id. */
  const slotWaiters = new Map<number, { timer: TimerHandle; resolve(granted: boolean): void }>();
  const grant = (ids: readonly number[]) => {
    for (const id of ids) {
      const w = slotWaiters.get(id);
      slotWaiters.delete(id);
      w?.timer.cancel();
      w?.resolve(true);
    }
  };
  /** A slot freed: grant it to waiting sync requests, and claim when the scheduler says so. */
  const onFreed = (f: Freed) => {
    grant(f.grant);
    if (f.wake) wake();
  };
  let ticking: Promise<void> | null = null;
  let poll: TimerHandle | null = null;
  /** Aborted on stop: in-flight runs end at once (their rows are settled as failures). */
  let shutdown = new AbortController();
  let unsubscribe: (() => Promise<void>) | null = null;
  /** The claim a deferral promised (a free slot is used within CLAIM_DEFER_MS at the latest). */
  let deferred: TimerHandle | null = null;

  /** The row's job, built in one object (a run's hot path: no spreads of partial jobs). */
  const toJob = (
    row: OutboxRow,
    onPark: () => void,
    script: ScriptRecord | undefined,
    own: OwnRequest | undefined,
  ): Job => {
    const principal = row.principal ? principalFromJson(jsonText<PrincipalJson>(row.principal)) : null;
    const job: Job = own
      ? // This process's own sync request: the request as the route decoded it (the row's payload
        // is its JSON text, byte for byte), not parsed back from that text.
        {
          executionId: row.execution_id ?? newId(),
          appId: row.app_id,
          scriptId: row.script_id,
          invocationType: row.source_kind,
          requestId: own.requestId,
          request: own.request,
          requestJson: own.requestJson ?? null,
          event: null,
          principal,
          depth: row.depth,
          script: script ?? null,
          onPark,
        }
      : payloadJob(row, principal, script, onPark);
    if (row.reply_to && deps.syncWaitMs !== undefined) job.waitMs = deps.syncWaitMs;
    return job;
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

  const runRow = async (
    row: OutboxRow,
    onPark: () => void,
    script?: ScriptRecord,
    own?: OwnRequest,
  ): Promise<void> => {
    const job = toJob(row, onPark, script, own);
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
    // A run that parks (waits on I/O) frees its slot then: the slots count runs executing.
    const hold = new SlotHold(slots, onFreed, sync);
    const p: Promise<void> = runRow(row, () => hold.release(), script, own)
      .catch((err) =>
        logger.error({ err, outbox_id: row.id }, "settling an outbox row failed; its lease will expire"),
      )
      .finally(() => {
        inflight.delete(p);
        hold.release();
      });
    inflight.add(p);
  };

  /**
   * Rows this process holds and will not run after all (stopping, or beyond the slots free when
   * a claim returned: those hold no slot, `counted` false): anyone's again at once, not after
   * their lease; other processes hear of them. Awaited by idle() (stop waits for it).
   */
  const giveBack = (rows: readonly OutboxRow[], counted = true) => {
    if (counted) grant(slots.givenBack(rows.length));
    const p: Promise<void> = repo
      .giveBack(
        database.db,
        instanceId,
        rows.map((r) => r.id),
      )
      .then(
        () => {
          if (database.dialect.sharedByProcesses) return database.notifier.publish(OUTBOX_CHANNEL, "");
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

  /** Start rows claimed by this process (their slots are counted as running), unless stopping. */
  const begin = (rows: readonly OutboxRow[], scripts: ReadonlyMap<string, ScriptRecord> | null) => {
    // A run started now would only end as a shutdown failure (an attempt spent, maybe a dead letter).
    if (slots.stopped) return giveBack(rows);
    for (const row of rows) start(row, scripts?.get(row.script_id));
  };

  const tick = async () => {
    try {
      do {
        const step = slots.nextClaim();
        if (step.kind === "none") break;
        if (step.kind === "defer") {
          if (step.arm)
            deferred = clock.setTimeout(() => {
              deferred = null;
              slots.deferElapsed();
              wake();
            }, step.ms);
          break;
        }
        if (step.cancelDefer) {
          deferred?.cancel();
          deferred = null;
        }
        let rows: OutboxRow[] = [];
        let claimed: ClaimResult;
        try {
          // One statement, its own transaction (outbox-repository.ts claim).
          rows = await repo.claim(database.db, instanceId, step.want);
        } catch (err) {
          grant(slots.claimReturned(step.want, 0, true).grant);
          throw err;
        }
        claimed = slots.claimReturned(step.want, rows.length);
        if (claimed.giveBack > 0) {
          // The rows beyond the free slots are anyone's again at once (the scheduler counted no slot for them).
          giveBack(rows.slice(claimed.keep), false);
          rows = rows.slice(0, claimed.keep);
        }
        grant(claimed.grant);
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
      } while (slots.claimAgain);
    } catch (err) {
      logger.error({ err }, "outbox claim failed");
    }
  };

  function wake(): void {
    if (!slots.wake()) return;
    // tick() may finish synchronously (no free slot): clear the marker only for this tick.
    const p = tick();
    ticking = p;
    void p.then(() => {
      if (ticking !== p) return;
      ticking = null;
      if (slots.claimLoopEnded()) wake(); // a wake-up that arrived as the tick was finishing
    });
  }

  /** Announce rows this process wrote: wake here now, and other processes via NOTIFY. */
  const enqueued = (): void => {
    wake();
    if (database.dialect.sharedByProcesses)
      void database.notifier
        .publish(OUTBOX_CHANNEL, "")
        .catch((err) => logger.warn({ err }, "outbox notify failed"));
  };
  /**
   * Reserved slots (local.reserve) whose rows are neither started nor given back yet: their write
   * is in flight. stop() waits for them, so every row written claimed by this process is started
   * or given back before it stops, never left to its lease.
   */
  let reservedDone: { promise: Promise<void>; resolve: () => void } | null = null;
  const settleReserved = () => {
    if (slots.reserved > 0 || !reservedDone) return;
    reservedDone.resolve();
    reservedDone = null;
  };

  /**
   * Wait for a slot (counted as running when it resolves true); false when the wait ran out or the
   * dispatcher stopped. A sync request finding every slot taken waits here (a run ends every few
   * milliseconds under load) before its row goes in unclaimed, for whichever process claims it.
   */
  const waitForSlot = (id: number, ms: number) =>
    new Promise<boolean>((resolve) => {
      const timer = clock.setTimeout(() => {
        if (!slots.syncWaitExpired(id)) return;
        slotWaiters.delete(id);
        resolve(false);
      }, ms);
      slotWaiters.set(id, { timer, resolve });
    });
  const refuse = (ids: readonly number[]) => {
    for (const id of ids) {
      const w = slotWaiters.get(id);
      slotWaiters.delete(id);
      w?.timer.cancel();
      w?.resolve(false);
    }
  };

  /** Resolves when nothing is running (tests, shutdown). */
  const idle = async (): Promise<void> => {
    while (inflight.size > 0 || ticking || slots.reserved > 0) {
      if (slots.reserved > 0 && !reservedDone) {
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
    leaseMs,
    reserve: (n) => slots.reserve(n),
    unreserve(n) {
      const freed = slots.unreserve(n);
      settleReserved();
      onFreed(freed);
    },
    start(rows, scripts) {
      slots.reservedWritten(rows.length);
      settleReserved();
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
      const decision = slots.syncArrives();
      const slot =
        decision.kind === "run" ||
        (decision.kind === "wait" && (await waitForSlot(decision.id, decision.ms)));
      if (slot) {
        const claimed = { ...row, claimed_by: instanceId, lease_until: toIso(clock.now() + leaseMs) };
        try {
          await commits.writeCommitted(repo.insertWrite(claimed));
        } catch (err) {
          onFreed(slots.runEnded(true));
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
      return slots.running;
    },
    async start() {
      slots.start();
      shutdown = new AbortController();
      poll = clock.setInterval(wake, deps.pollMs ?? 1000);
      if (deps.heartbeatMs !== undefined)
        heartbeat = clock.setInterval(() => {
          repo
            .renewLeases(database.db, instanceId)
            .catch((err) => logger.error({ err }, "renewing this process's outbox claims failed"));
        }, deps.heartbeatMs);
      if (database.dialect.sharedByProcesses)
        unsubscribe = await database.notifier.subscribe(OUTBOX_CHANNEL, wake);
      wake();
    },
    async stop() {
      refuse(slots.stop());
      poll?.cancel();
      heartbeat?.cancel();
      deferred?.cancel();
      deferred = null;
      await unsubscribe?.();
      shutdown.abort();
      await idle();
    },
  };
}
export type Dispatcher = ReturnType<typeof createDispatcher>;
