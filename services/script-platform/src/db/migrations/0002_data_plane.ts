import type { Migration } from "@app/kit/db";

// Owned by: platform data plane: kv, docs, files, secrets, topics, outbox, executions. Placeholder until the first real version of this migration lands;
// once a build containing it ships, it is never edited again (add a new numbered file).
export const migration: Migration = {
  version: 2,
  name: "data_plane",
  sql: "SELECT 1;",
};
