import type { Migration } from "@app/kit/db";

/**
 * Derivative claims are leases (issue 12). Never edit once shipped.
 * - uploads.derivative_lease_until (ms since epoch): a render in progress belongs to the worker
 *   that claimed it until then. Without it a second worker (another lane or another process) saw
 *   a claimed row as claimable again and rendered the same upload twice.
 */
const common = `
ALTER TABLE uploads ADD COLUMN derivative_lease_until {{bigint}};
`;

export const migration: Migration = {
  version: 8,
  name: "derivative_lease",
  sql: { sqlite: common, postgres: common },
};
