import type { Migration } from "@app/kit/db";

// Owned by: gallery-export helper (additions after 001). Placeholder until the first real version of this migration lands;
// once a build containing it ships, it is never edited again (add a new numbered file).
export const migration: Migration = {
  version: 3,
  name: "export_additions",
  sql: "SELECT 1;",
};
