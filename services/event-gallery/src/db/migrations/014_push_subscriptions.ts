import type { Migration } from "@app/kit/db";

/**
 * Host notifications (issue 27, item 6). Never edit once shipped.
 * - push_subscriptions: one browser push subscription per endpoint, owned by a host or the admin
 *   (a later demotion or ban stops delivery at send time; the row stays until unsubscribed).
 * - last_pending_at: when this subscription last got "uploads waiting"; the conditional UPDATE on
 *   it is the one-per-minute claim every process shares.
 */
const sql = `
CREATE TABLE push_subscriptions (
  endpoint TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  p256dh TEXT NOT NULL,
  auth TEXT NOT NULL,
  created_at {{timestamp}} NOT NULL,
  last_pending_at {{timestamp}}
);
CREATE INDEX push_subscriptions_user ON push_subscriptions (user_id);
`;

export const migration: Migration = {
  version: 14,
  name: "push_subscriptions",
  sql: { sqlite: sql, postgres: sql },
};
