import type { RequestView } from "./job.js";

// The group commit lives in group-commit.ts; the dispatcher takes it from here with the outbox's SQL.
export { createGroupCommit, type GroupCommit } from "./group-commit.js";
// The outbox's SQL lives in outbox-repository.ts; what the dispatcher and the runtime take from here
// is re-exported so their imports stay put.
export {
  LEASE_MS,
  type OutboxRepo,
  type OutboxRow,
  outboxRepo,
  STALE_REPLY_MS,
} from "./outbox-repository.js";

/** HTTP payload of an outbox row: the request (bytes base64) and the request id. */
export interface HttpPayload {
  request: Omit<RequestView, "body"> & { body: unknown; body_base64?: string };
  request_id: string | null;
}

export function encodeHttpPayload(request: RequestView, requestId: string | null): HttpPayload {
  // Spelled out (body last): rest-destructuring and spreads cost a sync request measurable
  // main-thread CPU (README, Execution).
  const { method, path, headers, params, query, rest, body } = request;
  if (body instanceof Uint8Array)
    return {
      request: {
        method,
        path,
        headers,
        params,
        query,
        rest,
        body: null,
        body_base64: Buffer.from(body).toString("base64"),
      },
      request_id: requestId,
    };
  return { request: { method, path, headers, params, query, rest, body }, request_id: requestId };
}

export function decodeHttpRequest(p: HttpPayload["request"]): RequestView {
  const { body_base64, body, ...rest } = p;
  return { ...rest, body: body_base64 !== undefined ? Buffer.from(body_base64, "base64") : body };
}
