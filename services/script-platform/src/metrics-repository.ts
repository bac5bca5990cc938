import type { Kysely } from "@app/kit/db";
import type { PlatformDB } from "./db/schema.js";
import {
  EXECUTION_STATUSES,
  type ExecutionStatus,
  executionStatus,
} from "./execution/executions-repository.js";

/** The SQL behind the platform's /metrics gauges (read on each scrape, through the reader). */
type Db = Kysely<PlatformDB>;

const count = (row: { n: number | string } | undefined) => Number(row?.n ?? 0);

/**
 * Execution rows still retained, by the status records and the executions filter show
 * (`ok | error | timeout | limit`, each present, 0 when none): one vocabulary in every view.
 */
export async function executionsByStatus(db: Db): Promise<{ status: ExecutionStatus; n: number }[]> {
  const rows = await db
    .selectFrom("executions")
    .select(["status", "error_code", (eb) => eb.fn.countAll<number>().as("n")])
    .groupBy(["status", "error_code"])
    .execute();
  const by = new Map<ExecutionStatus, number>(EXECUTION_STATUSES.map((s) => [s, 0]));
  for (const r of rows) {
    const s = executionStatus(r.status, r.error_code);
    by.set(s, (by.get(s) ?? 0) + Number(r.n));
  }
  return [...by].map(([status, n]) => ({ status, n }));
}

/** Outbox rows not yet delivered (due now or later). */
export async function outboxDepth(db: Db): Promise<number> {
  return count(
    await db
      .selectFrom("outbox")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .executeTakeFirst(),
  );
}

/** Dead letters nobody has resolved yet. */
export async function unresolvedDeadLetters(db: Db): Promise<number> {
  return count(
    await db
      .selectFrom("dead_letters")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("resolved_at", "is", null)
      .executeTakeFirst(),
  );
}
