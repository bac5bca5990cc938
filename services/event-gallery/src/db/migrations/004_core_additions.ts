import type { Migration } from "@app/kit/db";

// Shipped as a no-op (core additions after 001); never edited again: new schema goes into a new numbered file.
export const migration: Migration = {
  version: 4,
  name: "core_additions",
  sql: "SELECT 1;",
};
