import { FakeClock } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { createTestDatabase } from "@app/kit/db/testing";
import { newId } from "@app/kit/ids";
import { captureLogger } from "@app/kit/logger";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ScriptRecord } from "../../src/control/scripts-repository.js";
import { migrations } from "../../src/db/migrations/index.js";
import type { PlatformDB } from "../../src/db/schema.js";
import type { Job, JobRunner } from "../../src/dispatch/job.js";
import { type OutboxRow, outboxRepo } from "../../src/dispatch/outbox.js";
import { until } from "../runtime/turns.js";
import { backlogRow, succeeded, testDispatcher } from "./outbox-fixtures.js";

const APP = newId();

/**
 * The dispatcher reads the scripts of a claimed batch in one call (not one read per run) and
 * hands each run its own script; when that read fails, the runs still run (each reads its own).
 */
describe("dispatcher: the scripts of a claim are read at once", () => {
  let database: Database<PlatformDB>;
  let cleanup: () => Promise<void>;
  const clock = new FakeClock(Date.parse("2026-03-01T10:00:00.000Z"));
  const cap = captureLogger();
  const script = (id: string): ScriptRecord => ({
    id,
    app_id: APP,
    name: `s-${id}`,
    kind: "endpoint",
    source: "export default () => null",
    description: "",
    timeout_seconds: 5,
    sandbox: {},
    memory_limit_mb: null,
    created_at: clock.iso(),
    updated_at: clock.iso(),
    language: "javascript",
    authored_source: null,
    version: 1,
  });
  const known = [newId(), newId()];
  const gone = newId();
  let reads: string[][] = [];
  let failReads = false;
  let jobs: Job[] = [];
  const recorded = () =>
    database.db.selectFrom("executions").select("id").where("app_id", "=", APP).execute();

  const executor: JobRunner = {
    async scripts(ids) {
      reads.push([...ids]);
      if (failReads) throw new Error("database hiccup");
      return new Map(ids.filter((id) => known.includes(id)).map((id) => [id, script(id)]));
    },
    async run(job) {
      jobs.push(job);
      return succeeded(job, clock);
    },
  };
  const row = (i: number, scriptId: string): OutboxRow => backlogRow(clock, APP, i, { script_id: scriptId });

  const runBatch = async (n: number) => {
    const ids = [known[0], known[1], gone] as string[];
    const rows = Array.from({ length: n }, (_, i) => row(i, ids[i % 3] as string));
    await outboxRepo(database, clock).insertMany(database.db, rows);
    const dispatcher = testDispatcher({
      database,
      clock,
      logger: cap.logger,
      executor,
    });
    await dispatcher.start();
    await until(async () => (await recorded()).length === n);
    await dispatcher.stop();
    return rows;
  };

  beforeAll(async () => {
    const t = await createTestDatabase<PlatformDB>(migrations);
    database = t.database;
    cleanup = t.cleanup;
  });
  afterAll(async () => cleanup());
  beforeEach(async () => {
    await database.db.deleteFrom("outbox").execute();
    reads = [];
    jobs = [];
    await database.db.deleteFrom("executions").execute();
    failReads = false;
  });

  it("one read per claim; each run gets its own script, an unknown one none", async () => {
    const rows = await runBatch(12);
    // One claim took all twelve rows: one read with every row's script id.
    expect(reads).toHaveLength(1);
    expect(reads[0]?.slice().sort()).toEqual(rows.map((r) => r.script_id).sort());
    expect(jobs).toHaveLength(12);
    for (const job of jobs) {
      if (job.scriptId === gone) expect(job.script ?? null).toBeNull();
      else expect(job.script).toMatchObject({ id: job.scriptId, app_id: APP });
    }
    expect(await database.db.selectFrom("outbox").select("id").execute()).toEqual([]);
  });

  it("a failed read only costs speed: every run still runs and settles", async () => {
    failReads = true;
    await runBatch(6);
    expect(reads).toHaveLength(1);
    expect(jobs).toHaveLength(6);
    expect(jobs.every((j) => (j.script ?? null) === null)).toBe(true);
    expect(cap.text()).toContain("each run reads its own");
    expect(await database.db.selectFrom("outbox").select("id").execute()).toEqual([]);
  });
});
