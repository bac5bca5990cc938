import type { Migration } from "@app/kit/db";

// Owned by: platform control (admin login throttle). Failed admin logins per username, shared by
// every process on the database so the throttle holds across instances. The key is the SHA-256
// of the lower-cased username (no attacker-chosen text is stored); times are epoch milliseconds.
// Rows live one window (15 minutes) and are pruned as failures come in.
// Once a build containing it ships, it is never edited again.
export const migration: Migration = {
  version: 6,
  name: "login_failures",
  sql: `
CREATE TABLE login_failures (
  username_key TEXT PRIMARY KEY,
  failures INTEGER NOT NULL,
  window_start_ms {{bigint}} NOT NULL
);
CREATE INDEX login_failures_window ON login_failures (window_start_ms);
`,
};
