import type { Logger } from "@app/kit/logger";
import type { EventBus } from "../context.js";

type Listener = (event: string, data: Record<string, unknown>, hostsOnly: boolean) => void;

/**
 * In-process fan-out. Publishing never throws into the caller (a publish happens after a commit;
 * a broken subscriber must not turn a committed write into an error response).
 */
export function createEventBus(logger: Logger): EventBus {
  const listeners = new Set<Listener>();
  return {
    publish(event, data, opts) {
      for (const fn of listeners) {
        try {
          fn(event, data, opts?.hostsOnly ?? false);
        } catch (err) {
          logger.warn({ err, event }, "event subscriber failed");
        }
      }
    },
    subscribe(fn) {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
  };
}
