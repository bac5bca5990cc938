import type { Migration } from "@app/kit/db";

// Owned by: authoring (issue 11): script language and version history. Once a build containing it
// ships, it is never edited again.
//
// `scripts.source` keeps holding what the sandbox runs (for TypeScript: the type-stripped
// JavaScript, same lines and columns), so the engine needs no change; the author's own text sits
// in `authored_source` (NULL for JavaScript, where the two are the same).
// `script_versions` keeps every saved source: version 1 on create, +1 on every save that changes
// source, language or sandbox. Existing scripts start at version 1 with their current source.
export const migration: Migration = {
  version: 4,
  name: "script_versions",
  sql: `
ALTER TABLE scripts ADD COLUMN language TEXT NOT NULL DEFAULT 'javascript';
ALTER TABLE scripts ADD COLUMN authored_source TEXT;
ALTER TABLE scripts ADD COLUMN version INTEGER NOT NULL DEFAULT 1;

CREATE TABLE script_versions (
  script_id TEXT NOT NULL REFERENCES scripts(id) ON DELETE CASCADE,
  version INTEGER NOT NULL,
  language TEXT NOT NULL,
  source TEXT NOT NULL,
  sandbox {{json}} NOT NULL,
  created_by TEXT,
  created_at {{timestamp}} NOT NULL,
  PRIMARY KEY (script_id, version)
);

INSERT INTO script_versions (script_id, version, language, source, sandbox, created_by, created_at)
SELECT id, 1, 'javascript', source, sandbox, NULL, updated_at FROM scripts;
`,
};
