import type { Kysely } from "@app/kit/db";
import type { PlatformDB } from "./db/schema.js";

/** The SQL behind the platform's /metrics gauges (read on each scrape, through the reader). */
type Db = Kysely<PlatformDB>;

const count = (row: { n: number | string } | undefined) => Number(row?.n ?? 0);

/** Execution rows still retained, by status (succeeded, failed, ...). */
export async function executionsByStatus(db: Db): Promise<{ status: string; n: number }[]> {
  const rows = await db
    .selectFrom("executions")
    .select(["status", (eb) => eb.fn.countAll<number>().as("n")])
    .groupBy("status")
    .execute();
  return rows.map((r) => ({ status: r.status, n: Number(r.n) }));
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
