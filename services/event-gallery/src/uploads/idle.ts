import type { IncomingMessage } from "node:http";

/**
 * End a request whose client sends nothing for `ms` (a phone that went to sleep mid-upload would
 * otherwise hold its connection and temp file for minutes). Returns the undo for when the handler
 * is done, so a keep-alive connection is not cut later.
 */
export function endWhenIdle(raw: IncomingMessage, ms: number): () => void {
  // Injected test requests have no socket to time out.
  if (typeof raw.setTimeout !== "function") return () => {};
  raw.setTimeout(ms, () => raw.destroy());
  return () => {
    raw.setTimeout(0);
  };
}
