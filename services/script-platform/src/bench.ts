// `@app/script-platform/bench`: the internals bench/ drives below the HTTP API (an outbox backlog,
// the sync path's writes on the platform's own schema, the route table, the pubsub SDK). Not an
// API: it changes with the service.
export { appsRepo } from "./control/apps-repository.js";
export { parseHost, parsePath } from "./control/route-patterns.js";
export { buildSnapshot, matchIn, type RouteView } from "./control/route-table.js";
export { scriptsRepo } from "./control/scripts-repository.js";
export { migrations } from "./db/migrations/index.js";
export type { PlatformDB } from "./db/schema.js";
export { createGroupCommit, type GroupCommit, type OutboxRow, outboxRepo } from "./dispatch/outbox.js";
export { executionsRepo } from "./execution/executions-repository.js";
export { pubsubOps } from "./sdk/pubsub.js";
