import { FakeClock, toIso } from "@app/kit/clock";
import { type Database, openDatabase } from "@app/kit/db";
import { createTestDatabase } from "@app/kit/db/testing";
import { newId } from "@app/kit/ids";
import { captureLogger } from "@app/kit/logger";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { migrations } from "../../src/db/migrations/index.js";
import type { PlatformDB } from "../../src/db/schema.js";
import { createChangeEvents, type EventSink } from "../../src/dispatch/change-events.js";
import { scriptsByIds } from "../../src/dispatch/change-events-repository.js";
import {
  createOutboxWriter,
  type LocalRuns,
  type OutboxWriter,
  type TriggeredRun,
} from "../../src/dispatch/enqueue.js";
import { OUTBOX_CHANNEL } from "../../src/dispatch/enqueue-repository.js";
import type { TransactionInfo } from "../../src/dispatch/group-commit.js";
import { LEASE_MS, type OutboxRow, outboxRepo } from "../../src/dispatch/outbox.js";
import { matchTopic } from "../../src/triggers/patterns.js";
import { insertTrigger, setTriggerEnabled } from "../../src/triggers/repository.js";
import { until } from "../runtime/turns.js";

const APP = newId();

/**
 * publishDurable batches (concurrent publishes share a transaction), what a failed batch leaves
 * behind, trigger changes seen at once by another process, and the one-statement outbox claim.
 * "Another process" is a second database handle on the same database, as a second instance has.
 */
describe("publish batches, trigger changes across instances, outbox claims", () => {
  let database: Database<PlatformDB>;
  let other: Database<PlatformDB>;
  let cleanup: () => Promise<void>;
  const clock = new FakeClock(Date.parse("2026-03-01T10:00:00.000Z"));
  const cap = captureLogger();
  const transactions: TransactionInfo[] = [];

  /** Fails the whole outbox write of any batch that holds a message marked `poison`. */
  const poisoned = (real: OutboxWriter): OutboxWriter => ({
    ...real,
    async enqueueOwn(trx, runs, scriptsOf, hold) {
      const own = await real.enqueueOwn(trx, runs, scriptsOf, hold);
      if (runs.some((r) => (r.event.pubsub as { message?: { poison?: boolean } }).message?.poison))
        throw new Error("poisoned message");
      return own;
    },
  });
  const sinkOn = (db: Database<PlatformDB>, onTransaction?: (t: TransactionInfo) => void): EventSink =>
    createChangeEvents({
      clock,
      database: db,
      logger: cap.logger,
      maxDepth: 8,
      outbox: poisoned(createOutboxWriter({ dialect: db.dialect, wake: () => {} })),
      ...(onTransaction ? { publishCommit: { onTransaction } } : {}),
    });
  let events: EventSink;
  let eventsOther: EventSink;

  async function pubsubTrigger(db: Database<PlatformDB>, topic: string, appId = APP) {
    const id = newId();
    await insertTrigger(db.db, db.dialect, {
      id,
      app_id: appId,
      kind: "pubsub",
      script_id: `script-${id}`,
      enabled: true,
      registered_by_principal: { admin_id: "a1", scopes: ["app:admin"] },
      retry: null,
      created_at: clock.iso(),
      detail: {
        collection_pattern: null,
        operations: null,
        topic_pattern: topic,
        cron_schedule: null,
        cron_timezone: null,
        cron_next_due_at: null,
        cron_last_fired_at: null,
        email_inbound_secret_enc: null,
      },
    });
    return id;
  }
  const outboxRows = () => database.db.selectFrom("outbox").selectAll().execute();
  const messages = (rows: { payload: string }[]) =>
    rows.map(
      (r) =>
        (JSON.parse(r.payload) as { event: { pubsub: { message: { i: number } } } }).event.pubsub.message.i,
    );

  beforeAll(async () => {
    const t = await createTestDatabase<PlatformDB>(migrations);
    database = t.database;
    other = openDatabase<PlatformDB>({ url: t.env.databaseUrl, sqliteFile: t.env.sqliteFile });
    cleanup = async () => {
      await other.close();
      await t.cleanup();
    };
    events = sinkOn(database, (t) => transactions.push(t));
    eventsOther = sinkOn(other);
  });
  afterAll(async () => cleanup());
  beforeEach(async () => {
    transactions.length = 0;
    for (const table of ["outbox", "realtime_messages", "topics", "trigger_details", "triggers"] as const)
      await database.db.deleteFrom(table).execute();
  });

  it("concurrent publishes share one transaction, each row written once with its own count", async () => {
    await pubsubTrigger(database, "orders.*");
    await pubsubTrigger(database, "orders.created");
    const counts = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        events.publish({
          appId: APP,
          topic: i % 2 ? "orders.created" : "orders.paid",
          message: { i },
          depth: 0,
        }),
      ),
    );
    expect(counts).toEqual(Array.from({ length: 10 }, (_, i) => (i % 2 ? 2 : 1)));
    expect(transactions).toEqual([{ items: 10, ok: true, alone: false }]);
    const rows = await outboxRows();
    expect(rows).toHaveLength(15);
    expect(messages(rows).sort((a, b) => a - b)).toEqual([0, 1, 1, 2, 3, 3, 4, 5, 5, 6, 7, 7, 8, 9, 9]);
  });

  it("a failed batch loses nothing: the others commit once each, the failing publish alone fails", async () => {
    await pubsubTrigger(database, "t");
    // An external topic: its realtime log rows must roll back with the failed batch too.
    await database.db
      .insertInto("topics")
      .values({ app_id: APP, name: "t", external: 1, created_at: clock.iso() })
      .execute();
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, (_, i) =>
        events.publish({
          appId: APP,
          topic: "t",
          message: { i, ...(i === 2 ? { poison: true } : {}) },
          depth: 0,
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual([
      "fulfilled",
      "fulfilled",
      "rejected",
      "fulfilled",
      "fulfilled",
    ]);
    expect(results.filter((r) => r.status === "fulfilled").map((r) => r.value)).toEqual([1, 1, 1, 1]);
    expect(transactions).toEqual([
      { items: 5, ok: false, alone: false },
      { items: 1, ok: true, alone: true },
      { items: 1, ok: true, alone: true },
      { items: 1, ok: false, alone: true },
      { items: 1, ok: true, alone: true },
      { items: 1, ok: true, alone: true },
    ]);
    expect(messages(await outboxRows()).sort()).toEqual([0, 1, 3, 4]);
    const logged = await database.db.selectFrom("realtime_messages").select("message").execute();
    expect(logged.map((r) => (JSON.parse(r.message) as { i: number }).i).sort()).toEqual([0, 1, 3, 4]);
  });

  it("the writer announces a transaction's rows once, at commit; a rolled-back write announces nothing", async () => {
    let wakes = 0;
    const heard: string[] = [];
    const writer = createOutboxWriter({ dialect: database.dialect, wake: () => void wakes++ });
    const pg = database.backend === "postgres";
    // Another instance's dispatcher listens on the channel (PostgreSQL: NOTIFY at commit).
    const unsubscribe = pg ? await other.notifier.subscribe(OUTBOX_CHANNEL, (p) => void heard.push(p)) : null;
    const run = (i: number): TriggeredRun => ({
      appId: APP,
      sourceKind: "pubsub",
      triggerId: newId(),
      scriptId: newId(),
      event: { pubsub: { message: { i } } },
      depth: 1,
      principal: null,
      dueAt: clock.iso(),
      now: clock.iso(),
    });
    await database.writeTx(async (trx) => {
      await writer.enqueueMany(trx, [run(1), run(2)]);
      await writer.enqueue(trx, run(3));
    });
    await expect(
      database.writeTx(async (trx) => {
        await writer.enqueueMany(trx, [run(4)]);
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    expect(messages(await outboxRows()).sort()).toEqual([1, 2, 3]);
    if (pg) {
      // Commits are delivered in order: once the marker is heard, everything before it was.
      await database.notifier.publish(OUTBOX_CHANNEL, "marker");
      await until(() => heard.includes("marker"));
      expect(heard).toEqual(["", "marker"]);
      expect(wakes).toBe(0);
      await unsubscribe?.();
    } else expect(wakes).toBe(2); // SQLite: this process's dispatcher, once per transaction
  });

  it("a batch that only writes outbox rows needs no transaction on PostgreSQL; each such write announces itself", async () => {
    await pubsubTrigger(database, "plain");
    await pubsubTrigger(database, "live");
    await database.db
      .insertInto("topics")
      .values([
        { app_id: APP, name: "live", external: 1, created_at: clock.iso() },
        { app_id: APP, name: "plain", external: 0, created_at: clock.iso() },
      ])
      .execute();
    const pg = database.backend === "postgres";
    const heard: string[] = [];
    const unsubscribe = pg ? await other.notifier.subscribe(OUTBOX_CHANNEL, (p) => void heard.push(p)) : null;
    /** Whether each outbox write ran inside a Kysely transaction (PostgreSQL's writeTx). */
    const inTransaction: boolean[] = [];
    const real = createOutboxWriter({ dialect: database.dialect, wake: () => {} });
    const sink = createChangeEvents({
      clock,
      database,
      logger: cap.logger,
      maxDepth: 8,
      outbox: {
        ...real,
        enqueueOwn: (trx, runs, scriptsOf, hold) => {
          inTransaction.push(trx.isTransaction);
          return real.enqueueOwn(trx, runs, scriptsOf, hold);
        },
      },
    });
    const publishAll = (topics: string[], from: number) =>
      Promise.all(
        topics.map((topic, k) => sink.publish({ appId: APP, topic, message: { i: from + k }, depth: 0 })),
      );
    // Two batches of plain messages, then one with a message on the external topic.
    expect(await publishAll(["plain", "plain", "nothing"], 0)).toEqual([1, 1, 0]);
    expect(await publishAll(["plain"], 3)).toEqual([1]);
    expect(await publishAll(["plain", "live"], 4)).toEqual([1, 1]);
    expect(messages(await outboxRows()).sort()).toEqual([0, 1, 3, 4, 5]);
    const logged = await database.db.selectFrom("realtime_messages").select("message").execute();
    expect(logged.map((r) => (JSON.parse(r.message) as { i: number }).i)).toEqual([5]);
    // The principal goes to the row as the trigger stored it.
    const principals = await database.db.selectFrom("outbox").select("principal").execute();
    for (const r of principals)
      expect(JSON.parse(r.principal ?? "null")).toEqual({ admin_id: "a1", scopes: ["app:admin"] });
    if (pg) {
      expect(inTransaction).toEqual([false, false, true]);
      await database.notifier.publish(OUTBOX_CHANNEL, "marker");
      await until(() => heard.includes("marker"));
      // One announcement per write: none is swallowed as "already announced" outside a transaction.
      expect(heard).toEqual(["", "", "", "marker"]);
      await unsubscribe?.();
    }
  });

  /** A script and two pubsub triggers running it, on "orders.*" and "orders.paid"; its id. */
  async function orderTriggers(): Promise<string> {
    const scriptId = newId();
    await database.db
      .insertInto("apps")
      .values({
        id: APP,
        slug: `a${APP.slice(-8)}`,
        name: "a",
        description: "",
        created_at: clock.iso(),
        updated_at: clock.iso(),
      })
      .onConflict((oc) => oc.column("id").doNothing())
      .execute();
    await database.db.deleteFrom("scripts").where("app_id", "=", APP).execute();
    await database.db
      .insertInto("scripts")
      .values({
        id: scriptId,
        app_id: APP,
        name: "sink",
        kind: "endpoint",
        source: "export default () => 1",
        description: "",
        timeout_seconds: 5,
        sandbox: database.dialect.json({}),
        memory_limit_mb: null,
        created_at: clock.iso(),
        updated_at: clock.iso(),
        authored_source: null,
      })
      .execute();
    const withScript = async (pattern: string) => {
      const id = await pubsubTrigger(database, pattern);
      await database.db.updateTable("triggers").set({ script_id: scriptId }).where("id", "=", id).execute();
    };
    await withScript("orders.*");
    await withScript("orders.paid");
    return scriptId;
  }

  /** This process's dispatcher as the writer sees it, with `free` slots; what it was asked to start. */
  function fakeLocal(slots: number) {
    const state = { free: slots, started: [] as { rows: OutboxRow[]; scripts: string[] }[] };
    const local: LocalRuns = {
      instanceId: "me",
      leaseMs: 30_000,
      reserve(n) {
        const k = Math.min(n, state.free);
        state.free -= k;
        return k;
      },
      unreserve(n) {
        state.free += n;
      },
      start(rows, scripts) {
        state.started.push({
          rows: [...rows],
          scripts: [...scripts.values()].map((s) => `${s.id}:${s.source}`),
        });
      },
    };
    return { state, local };
  }

  it("the runs this process has slots for are written claimed by it and started once committed", async () => {
    const scriptId = await orderTriggers();
    const pg = database.backend === "postgres";
    const heard: string[] = [];
    const unsubscribe = pg ? await other.notifier.subscribe(OUTBOX_CHANNEL, (p) => void heard.push(p)) : null;
    const { state, local } = fakeLocal(2);
    let wakes = 0;
    const sink = createChangeEvents({
      clock,
      database,
      logger: cap.logger,
      maxDepth: 8,
      outbox: createOutboxWriter({ dialect: database.dialect, wake: () => void wakes++, local: () => local }),
    });
    const publish = (i: number) =>
      sink.publish({ appId: APP, topic: "orders.paid", message: { i }, depth: 0 });
    // Three messages, two matching triggers each: six runs, slots for two of them here.
    expect(await Promise.all([publish(0), publish(1), publish(2)])).toEqual([2, 2, 2]);
    const rows = await outboxRows();
    expect(rows).toHaveLength(6);
    const mine = rows.filter((r) => r.claimed_by === "me");
    expect(state.started).toHaveLength(1);
    expect(state.started[0]?.scripts).toEqual([`${scriptId}:export default () => 1`]);
    expect(state.started[0]?.rows.map((r) => r.id).sort()).toEqual(mine.map((r) => r.id).sort());
    expect(mine).toHaveLength(2);
    for (const r of mine) expect(r.lease_until).toBe(toIso(clock.now() + 30_000));
    // The four without a slot here are anyone's: another instance claims exactly those.
    const theirs = await outboxRepo(other, clock).claim(other.db, "B", 10);
    expect(theirs.map((r) => r.id).sort()).toEqual(
      rows
        .filter((r) => r.claimed_by === null)
        .map((r) => r.id)
        .sort(),
    );
    // A write whose runs are all this process's own announces nothing (no NOTIFY, no wake-up).
    const wakesBefore = wakes;
    if (!pg) expect(wakesBefore).toBeGreaterThan(0);
    state.free = 10;
    expect(await publish(3)).toBe(2);
    expect(state.started).toHaveLength(2);
    expect(state.started[1]?.rows).toHaveLength(2);
    expect(wakes).toBe(wakesBefore);
    if (pg) {
      await database.notifier.publish(OUTBOX_CHANNEL, "marker");
      await until(() => heard.includes("marker"));
      expect(heard).toEqual(["", "marker"]);
    }
    await unsubscribe?.();
  });

  it("only runs due now are written claimed; a batch that does not commit frees its slots and starts nothing", async () => {
    const scriptId = await orderTriggers();
    const { state, local } = fakeLocal(10);
    const writer = createOutboxWriter({ dialect: database.dialect, wake: () => {}, local: () => local });
    const run = (dueAt: string): TriggeredRun => ({
      appId: APP,
      sourceKind: "pubsub",
      triggerId: newId(),
      scriptId,
      event: { pubsub: {} },
      depth: 1,
      principal: null,
      dueAt,
      now: clock.iso(),
    });
    const later = toIso(clock.now() + 60_000);
    const own = await writer.enqueueOwn(database.db, [run(clock.iso()), run(later)], (ids) =>
      scriptsByIds(database.db, database.dialect, ids),
    );
    expect(own?.rows.map((r) => r.due_at)).toEqual([clock.iso()]);
    expect(state.free).toBe(9);
    const rows = await outboxRows();
    expect(rows.map((r) => [r.due_at === later, r.claimed_by])).toEqual(
      expect.arrayContaining([
        [false, "me"],
        [true, null],
      ]),
    );
    own?.start();
    own?.drop(); // too late: it started
    expect(state.free).toBe(9);
    expect(state.started.map((s) => s.scripts)).toEqual([[`${scriptId}:export default () => 1`]]);
    await database.db.deleteFrom("outbox").execute();

    // A batch whose transaction fails after its rows were written (a realtime log row fails here):
    // its runs roll back, their slots come back, nothing starts; each publish is retried alone.
    await database.db
      .insertInto("topics")
      .values({ app_id: APP, name: "orders.paid", external: 1, created_at: clock.iso() })
      .execute();
    state.started = [];
    const sink = createChangeEvents({
      clock,
      database,
      logger: cap.logger,
      maxDepth: 8,
      outbox: poisoned(createOutboxWriter({ dialect: database.dialect, wake: () => {}, local: () => local })),
    });
    const results = await Promise.allSettled(
      [0, 1, 2].map((i) =>
        sink.publish({ appId: APP, topic: "orders.paid", message: { i, poison: i === 1 }, depth: 0 }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    const written = await outboxRows();
    expect(written).toHaveLength(4);
    expect(written.map((r) => r.claimed_by)).toEqual(["me", "me", "me", "me"]);
    expect(state.started.flatMap((s) => s.rows.map((r) => r.id)).sort()).toEqual(
      written.map((r) => r.id).sort(),
    );
    expect(state.free).toBe(10 - 1 - 4);
  });

  it("a batch whose outbox statement fails writes nothing; each publish is retried alone", async () => {
    await pubsubTrigger(database, "t");
    const real = createOutboxWriter({ dialect: database.dialect, wake: () => {} });
    const sink = createChangeEvents({
      clock,
      database,
      logger: cap.logger,
      maxDepth: 8,
      // The statement fails before anything is written (as a failing one-statement write does).
      outbox: {
        ...real,
        async enqueueOwn(trx, runs, scriptsOf, hold) {
          if (runs.some((r) => (r.event.pubsub as { message?: { poison?: boolean } }).message?.poison))
            throw new Error("poisoned message");
          return real.enqueueOwn(trx, runs, scriptsOf, hold);
        },
      },
      publishCommit: { onTransaction: (t) => transactions.push(t) },
    });
    const results = await Promise.allSettled(
      Array.from({ length: 4 }, (_, i) =>
        sink.publish({
          appId: APP,
          topic: "t",
          message: { i, ...(i === 1 ? { poison: true } : {}) },
          depth: 0,
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled"]);
    expect(transactions.map((t) => [t.items, t.ok, t.alone])).toEqual([
      [4, false, false],
      [1, true, true],
      [1, false, true],
      [1, true, true],
      [1, true, true],
    ]);
    expect(messages(await outboxRows()).sort()).toEqual([0, 2, 3]);
  });

  it("a batch's runs follow the topic patterns, apps and enabled flags; slots it does not use come back", async () => {
    const APP2 = newId();
    const triggers: { id: string; app: string; pattern: string }[] = [];
    for (const [app, pattern] of [
      [APP, "*"],
      [APP, "orders.*"],
      [APP, "orders.paid"],
      [APP, "orders"],
      [APP2, "*"],
      [APP2, "orders.paid"],
    ] as const)
      triggers.push({ id: await pubsubTrigger(database, pattern, app), app, pattern });
    const off = await pubsubTrigger(database, "orders.paid");
    await setTriggerEnabled(database.db, APP, off, false);
    const { state, local } = fakeLocal(4);
    const sink = createChangeEvents({
      clock,
      database,
      logger: cap.logger,
      maxDepth: 8,
      outbox: createOutboxWriter({ dialect: database.dialect, wake: () => {}, local: () => local }),
    });
    const sent = [
      { app: APP, topic: "orders.paid" },
      { app: APP, topic: "orders" },
      { app: APP, topic: "orders." }, // "orders.*" needs something after the dot
      { app: APP, topic: "ordersX.paid" },
      { app: APP2, topic: "orders.paid" },
      { app: APP, topic: "orders.paid.x" },
      { app: newId(), topic: "orders.paid" }, // an app without triggers
    ];
    const expected = sent.map((m) =>
      triggers
        .filter((t) => t.app === m.app && matchTopic(t.pattern, m.topic))
        .map((t) => t.id)
        .sort(),
    );
    expect(expected.map((e) => e.length)).toEqual([3, 2, 1, 1, 2, 2, 0]);
    const publishAll = (depth: number) =>
      Promise.all(sent.map((m, i) => sink.publish({ appId: m.app, topic: m.topic, message: { i }, depth })));
    expect(await publishAll(0)).toEqual(expected.map((e) => e.length));
    const rows = await outboxRows();
    const byMessage = sent.map((_, i) =>
      rows
        .filter((r) => messages([r])[0] === i)
        .map((r) => r.trigger_id)
        .sort(),
    );
    expect(byMessage).toEqual(expected);
    for (const r of rows) {
      expect([r.source_kind, Number(r.depth), r.due_at, r.created_at]).toEqual([
        "pubsub",
        1,
        clock.iso(),
        clock.iso(),
      ]);
      expect(JSON.parse(r.payload).event.pubsub).toMatchObject({ published_at: clock.iso() });
      expect(JSON.parse(r.principal ?? "null")).toEqual({ admin_id: "a1", scopes: ["app:admin"] });
    }
    // Four slots: four rows written claimed and started, none held back for runs that did not come.
    expect(rows.filter((r) => r.claimed_by === "me")).toHaveLength(4);
    expect(state.started.flatMap((s) => s.rows)).toHaveLength(4);
    expect(state.free).toBe(0);
    state.free = 50;
    expect(await publishAll(1)).toEqual(expected.map((e) => e.length));
    expect(state.free).toBe(50 - 11);
    expect((await outboxRows()).filter((r) => Number(r.depth) === 2 && r.claimed_by === "me")).toHaveLength(
      11,
    );
    // At the depth limit a message triggers nothing; the rest of its batch still does.
    const atLimit = await Promise.all([
      sink.publish({ appId: APP, topic: "orders", message: { i: 100 }, depth: 8 }),
      sink.publish({ appId: APP, topic: "orders", message: { i: 101 }, depth: 7 }),
    ]);
    expect(atLimit).toEqual([0, 2]);
    expect(state.free).toBe(50 - 13);
  });

  it("a trigger disabled, enabled or added by another instance applies to the next publish at once", async () => {
    const id = await pubsubTrigger(database, "t");
    expect(await events.publish({ appId: APP, topic: "t", message: { i: 1 }, depth: 0 })).toBe(1);
    expect(await setTriggerEnabled(other.db, APP, id, false)).toBe(true);
    expect(await events.publish({ appId: APP, topic: "t", message: { i: 2 }, depth: 0 })).toBe(0);
    await setTriggerEnabled(other.db, APP, id, true);
    await pubsubTrigger(other, "t");
    expect(await events.publish({ appId: APP, topic: "t", message: { i: 3 }, depth: 0 })).toBe(2);
    // And the other way round: the second instance sees this one's change.
    await setTriggerEnabled(database.db, APP, id, false);
    expect(await eventsOther.publish({ appId: APP, topic: "t", message: { i: 4 }, depth: 0 })).toBe(1);
    expect(messages(await outboxRows()).sort()).toEqual([1, 3, 3, 4]);
  });

  it("claims are one statement: oldest due first, leases honoured, two instances never share a row", async () => {
    const now = clock.now();
    const row = (i: number, lease: string | null = null): OutboxRow => ({
      id: newId(),
      app_id: APP,
      source_kind: "pubsub",
      trigger_id: null,
      script_id: "s",
      execution_id: null,
      payload: JSON.stringify({ event: { pubsub: { message: { i } } } }),
      due_at: toIso(now - 100_000 + i * 10),
      attempts: 0,
      depth: 1,
      principal: null,
      reply_to: null,
      claimed_by: lease ? "gone" : null,
      lease_until: lease,
      created_at: toIso(now - 100_000),
    });
    const mine = outboxRepo(database, clock);
    const theirs = outboxRepo(other, clock);
    const held = row(-2, toIso(now + 1000)); // a live lease of another instance: left alone
    const expired = row(-1, toIso(now - 1)); // its instance died: taken again
    const future = { ...row(999), due_at: toIso(now + 60_000) }; // not due yet
    await mine.insertMany(database.db, [
      held,
      expired,
      future,
      ...Array.from({ length: 60 }, (_, i) => row(i)),
    ]);

    const first = await mine.claim(database.db, "A", 3);
    expect(messages(first)).toEqual([-1, 0, 1]);
    expect(first.every((r) => r.claimed_by === "A" && r.lease_until === toIso(now + LEASE_MS))).toBe(true);

    const claimed: Record<string, string[]> = { A: first.map((r) => r.id), B: [] };
    const claimer = async (repo: typeof mine, db: Database<PlatformDB>, who: "A" | "B") => {
      for (;;) {
        const got = await repo.claim(db.db, who, 5);
        if (got.length === 0) return;
        claimed[who]?.push(...got.map((r) => r.id));
      }
    };
    await Promise.all([claimer(mine, database, "A"), claimer(theirs, other, "B")]);
    const all = [...(claimed.A ?? []), ...(claimed.B ?? [])];
    expect(new Set(all).size).toBe(all.length);
    expect(all).toHaveLength(61);
    expect(all).not.toContain(held.id);
    expect(all).not.toContain(future.id);
    const stored = await database.db.selectFrom("outbox").select(["id", "claimed_by"]).execute();
    for (const r of stored)
      if (r.id !== held.id && r.id !== future.id)
        expect(r.claimed_by).toBe(claimed.A?.includes(r.id) ? "A" : "B");
  });
});
