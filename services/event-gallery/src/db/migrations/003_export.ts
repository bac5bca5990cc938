import type { Migration } from "@app/kit/db";

// Shipped as a no-op (export additions after 001); never edited again: new schema goes into a new numbered file.
export const migration: Migration = {
  version: 3,
  name: "export_additions",
  sql: "SELECT 1;",
};
