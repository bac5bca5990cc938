import type { Migration } from "@app/kit/db";

// Owned by: platform control plane: admins, sessions, api keys, apps, domains, scripts, routes. Placeholder until the first real version of this migration lands;
// once a build containing it ships, it is never edited again (add a new numbered file).
export const migration: Migration = {
  version: 1,
  name: "control_plane",
  sql: "SELECT 1;",
};
