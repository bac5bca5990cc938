import pg from "pg";
import { expect } from "vitest";

/** What stopping the server does to each connection of `url`'s database: its backend ends with 57P01. */
export async function terminateBackends(url: string): Promise<void> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
    );
  } finally {
    await admin.end();
  }
}

/** The contract's answer while the database is away: 503 database_unavailable with Retry-After. */
export function expectDatabaseUnavailable(res: {
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
}): void {
  expect(res.statusCode, res.body).toBe(503);
  expect(res.headers["retry-after"]).toBe("5");
  expect((JSON.parse(res.body) as { error: { code: string } }).error.code).toBe("database_unavailable");
}

/** One warn line for the outage, no error line and no stack however many requests failed. */
export function expectOneOutageLine(lines: readonly string[]): void {
  const parsed = lines.map((l) => JSON.parse(l) as { level: number; msg: string });
  expect(parsed.filter((l) => l.msg.startsWith("database unavailable")).length).toBe(1);
  expect(parsed.filter((l) => l.level >= 50)).toEqual([]);
  expect(lines.join("")).not.toContain('"stack"');
}
