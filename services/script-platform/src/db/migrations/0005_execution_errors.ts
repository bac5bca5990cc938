import type { Migration } from "@app/kit/db";

// Owned by: platform execution engine. A failed run's structured error (code, stack and the
// 1-based line/column in the script's own source) as columns, so the authoring views can show
// and filter them, and the instance (process) that ran each execution (scale-out forensics).
// Once a build containing it ships, it is never edited again.
export const migration: Migration = {
  version: 5,
  name: "execution_errors",
  sql: `
ALTER TABLE executions ADD COLUMN error_code TEXT;
ALTER TABLE executions ADD COLUMN error_stack TEXT;
ALTER TABLE executions ADD COLUMN error_line INTEGER;
ALTER TABLE executions ADD COLUMN error_column INTEGER;
ALTER TABLE executions ADD COLUMN instance_id TEXT;
`,
};
