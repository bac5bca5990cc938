import type { Migration } from "@app/kit/db";

// Owned by: gallery-core helper (additions to the schema after 001). Placeholder until used;
// once a build containing a real version ships, it is never edited again.
export const migration: Migration = {
  version: 4,
  name: "core_additions",
  sql: "SELECT 1;",
};
