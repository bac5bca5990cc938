import type { Migration } from "@app/kit/db";

// Owned by: gallery-media helper (additions after 001). Placeholder until the first real version of this migration lands;
// once a build containing it ships, it is never edited again (add a new numbered file).
export const migration: Migration = {
  version: 2,
  name: "media_additions",
  sql: "SELECT 1;",
};
