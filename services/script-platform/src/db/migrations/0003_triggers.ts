import type { Migration } from "@app/kit/db";

// Owned by: platform triggers: triggers, dead letters, cron state. Placeholder until the first real version of this migration lands;
// once a build containing it ships, it is never edited again (add a new numbered file).
export const migration: Migration = {
  version: 3,
  name: "triggers",
  sql: "SELECT 1;",
};
