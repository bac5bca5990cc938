import type { Clock } from "@app/kit/clock";
import type { Logger } from "@app/kit/logger";
import type { Alerts } from "../alerts/alerts.js";
import type { ToolContext } from "../mcp/tools.js";
import { createDigest, type Digest } from "./digest.js";
import { parseDigestSchedule } from "./schedule.js";
import { createSeenStore } from "./seen.js";

/** The digest of a bridge: whats_new always; the scheduled post when DIGEST_SCHEDULE and a webhook are set. */
export async function openDigest(opts: {
  schedule: string | undefined;
  stateDir: string;
  ctx: ToolContext;
  alerts: Alerts | null;
  clock: Clock;
  logger: Logger;
}): Promise<Digest> {
  const store = createSeenStore({ dir: opts.stateDir, logger: opts.logger });
  await store.load();
  const times = opts.schedule ? parseDigestSchedule(opts.schedule) : [];
  if (times.length > 0 && !opts.alerts)
    opts.logger.warn(
      "DIGEST_SCHEDULE is set but ALERT_WEBHOOK_URL is not: no digest is posted (whats_new still answers)",
    );
  const alerts = opts.alerts;
  return createDigest({
    ctx: opts.ctx,
    store,
    clock: opts.clock,
    logger: opts.logger,
    times,
    send: alerts ? (text, o) => alerts.send("digest", text, o) : null,
  });
}
