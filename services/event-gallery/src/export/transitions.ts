import { conflict } from "@app/kit/errors";
import { recordAudit } from "../audit/repository.js";
import type { AuthedUser, GalleryContext } from "../context.js";
import { lockEventRow, setReleased, setUploadsLocked } from "../event/repository.js";
import { type EventRow, type EventView, eventView, getEvent } from "../event/state.js";
import { keepsakeEstimate } from "./builder.js";
import { armJobs, countArmedJobs, EXPORT_KINDS, visibleOriginalBytes } from "./repository.js";

/**
 * The host's event transitions (seed "States and transitions / Event"), here in export/ because a
 * release arms the keepsake (event/ holds the event row and never imports export/):
 * open ⇄ locked (uploads only), open/locked → released (locked, keepsake armed), released → open.
 * Each runs in one write transaction; bus events go out after the commit.
 */

export type EventSummary = EventView;

const invalidState = (message: string) => conflict("invalid_state", message);

export type Transition = "lock" | "unlock" | "release" | "reopen";

/** Hooks the transitions need from the export worker, called after the commit. */
export interface TransitionEffects {
  /** Jobs were armed: start building. */
  jobsArmed(): void;
  /** The release was withdrawn: the archives may go (after the commit, never before). */
  releaseWithdrawn(): Promise<void>;
}

/** Free space below this raises the host's low-disk warning. */
export const LOW_DISK_BYTES = 10 * 1024 ** 3;

export interface HostEventView {
  event: EventSummary;
  uploads_locked_at: string | null;
  export_released_at: string | null;
  export_epoch: number;
  low_disk_warning: boolean;
  free_bytes: number;
  keepsake_estimate_bytes: number;
}

/** What the transitions and the host's event view need: parts of the context and the worker's hooks. */
export type EventTransitionsDeps = Pick<
  GalleryContext,
  "database" | "clock" | "settings" | "logger" | "bus" | "disk"
> & { effects: TransitionEffects };

export type EventTransitions = ReturnType<typeof createEventTransitions>;

export function createEventTransitions(deps: EventTransitionsDeps) {
  const summarizeEvent = (): Promise<EventSummary> => eventView(deps.database.db, deps.settings);

  async function applyTransition(actor: AuthedUser, transition: Transition): Promise<EventSummary> {
    const now = deps.clock.iso();
    const event = await deps.database.writeTx(async (trx) => {
      // Serialises concurrent transitions on PostgreSQL (SQLite's BEGIN IMMEDIATE already does).
      await lockEventRow(trx, deps.database.dialect);
      const current = await getEvent(trx);
      switch (transition) {
        case "lock":
          if (current.uploads_locked_at) throw invalidState("Uploads are already locked.");
          await setUploadsLocked(trx, now);
          break;
        case "unlock":
          if (current.export_released_at) throw invalidState("The gallery is released; reopen it instead.");
          if (!current.uploads_locked_at) throw invalidState("Uploads are not locked.");
          await setUploadsLocked(trx, null);
          break;
        case "release": {
          if (current.export_released_at) throw invalidState("The gallery is already released.");
          await setReleased(trx, {
            export_released_at: now,
            uploads_locked_at: current.uploads_locked_at ?? now,
          });
          await armJobs(trx, EXPORT_KINDS, current.export_epoch + 1, now);
          break;
        }
        case "reopen":
          if (!current.export_released_at) throw invalidState("The gallery is not released.");
          await setReleased(trx, { export_released_at: null, uploads_locked_at: null });
          break;
      }
      await recordAudit(trx, deps.database, {
        actorId: actor.id,
        action: `event.${transition}`,
        targetType: "event",
        targetId: null,
        at: now,
      });
      return getEvent(trx);
    });

    publishTransition(transition, event);
    if (transition === "release") deps.effects.jobsArmed();
    if (transition === "reopen")
      await deps.effects
        .releaseWithdrawn()
        .catch((err) => deps.logger.warn({ err }, "removing the withdrawn archives failed"));
    return summarizeEvent();
  }

  function publishTransition(transition: Transition, event: EventRow): void {
    const data = {
      uploads_locked: event.uploads_locked_at !== null,
      released: event.export_released_at !== null,
      epoch: event.export_epoch,
    };
    if (transition === "lock" || transition === "release") deps.bus.publish("event-closed", data);
    else deps.bus.publish("event-opened", data);
    if (transition === "reopen") deps.bus.publish("export-invalidated", { epoch: event.export_epoch });
  }

  /**
   * GET /host/event. The estimate is the size of the keepsake (both archives), before and after the
   * release; the low-disk warning counts only the builds still to run (armed jobs once released).
   * Counting only armed jobs in the estimate showed "0 B" once the builds were done (issue 14).
   */
  async function hostEventView(): Promise<HostEventView> {
    const { db } = deps.database;
    const event = await getEvent(db);
    const armed = event.export_released_at
      ? await countArmedJobs(db, event.export_epoch)
      : EXPORT_KINDS.length;
    const originals = await visibleOriginalBytes(db);
    const estimate = keepsakeEstimate(originals, EXPORT_KINDS.length);
    const stillNeeded = keepsakeEstimate(originals, armed);
    const { free_bytes } = await deps.disk.stat();
    return {
      event: await summarizeEvent(),
      uploads_locked_at: event.uploads_locked_at,
      export_released_at: event.export_released_at,
      export_epoch: event.export_epoch,
      low_disk_warning: free_bytes < LOW_DISK_BYTES || stillNeeded > free_bytes,
      free_bytes,
      keepsake_estimate_bytes: estimate,
    };
  }

  return { applyTransition, hostEventView };
}
