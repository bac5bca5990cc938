import type { Kysely } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";
import type { ChangeEvent, SdkDeps } from "./types.js";

export type Emit = (event: ChangeEvent) => Promise<void>;

/**
 * One data write transaction whose change events are emitted inside it (so outbox rows commit
 * with the data or not at all); when it wrote any, the dispatcher is woken after the commit.
 */
export async function writeWithEvents<T>(
  deps: Pick<SdkDeps, "database" | "onEnqueued" | "events">,
  fn: (trx: Kysely<PlatformDB>, emit: Emit) => Promise<T>,
): Promise<T> {
  let written = 0;
  const out = await deps.database.writeTx((trx) =>
    fn(trx, async (event) => {
      written += await deps.events.change(trx, event);
    }),
  );
  if (written > 0) deps.onEnqueued?.();
  return out;
}
