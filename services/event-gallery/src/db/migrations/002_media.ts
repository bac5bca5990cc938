import type { Migration } from "@app/kit/db";

// Shipped as a no-op (media additions after 001); never edited again: new schema goes into a new numbered file.
export const migration: Migration = {
  version: 2,
  name: "media_additions",
  sql: "SELECT 1;",
};
