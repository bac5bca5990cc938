import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CLAIM_DEFER_MS, type Freed, SlotScheduler } from "../../src/dispatch/scheduler.js";

// The dispatcher's slot policy without a database or workers: a model of the shell drives the
// scheduler through random event sequences (sync requests, runs ending, claims returning or
// failing, the outbox writer reserving, timers firing, wake-ups, a stop) and checks its
// invariants after every event.

type Cmd =
  | { t: "sync" }
  | { t: "end"; pick: number }
  | { t: "wake" }
  | { t: "enqueue"; n: number }
  | { t: "claimReturns"; pick: number }
  | { t: "claimFails" }
  | { t: "advance"; ms: number }
  | { t: "reserve"; n: number }
  | { t: "written"; pick: number; of: number }
  | { t: "stop" }
  | { t: "restart" };

const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 40, arbitrary: fc.constant<Cmd>({ t: "sync" }) },
  { weight: 50, arbitrary: fc.nat(1000).map<Cmd>((pick) => ({ t: "end", pick })) },
  { weight: 10, arbitrary: fc.constant<Cmd>({ t: "wake" }) },
  { weight: 20, arbitrary: fc.integer({ min: 1, max: 40 }).map<Cmd>((n) => ({ t: "enqueue", n })) },
  { weight: 30, arbitrary: fc.nat(1000).map<Cmd>((pick) => ({ t: "claimReturns", pick })) },
  { weight: 10, arbitrary: fc.constant<Cmd>({ t: "claimFails" }) },
  { weight: 20, arbitrary: fc.integer({ min: 1, max: 1200 }).map<Cmd>((ms) => ({ t: "advance", ms })) },
  { weight: 10, arbitrary: fc.integer({ min: 1, max: 12 }).map<Cmd>((n) => ({ t: "reserve", n })) },
  {
    weight: 1,
    arbitrary: fc.record({ pick: fc.nat(1000), of: fc.nat(1000) }).map<Cmd>((r) => ({ t: "written", ...r })),
  },
  { weight: 1, arbitrary: fc.constant<Cmd>({ t: "stop" }) },
  { weight: 1, arbitrary: fc.constant<Cmd>({ t: "restart" }) },
);

interface Options {
  max: number;
  syncSlots?: number;
  syncWaitMs: number;
}
const options: fc.Arbitrary<Options> = fc.record(
  {
    max: fc.integer({ min: 1, max: 40 }),
    syncSlots: fc.integer({ min: 0, max: 40 }),
    syncWaitMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 1000 })),
  },
  { requiredKeys: ["max", "syncWaitMs"] },
);

/** A plain assertion: the model checks thousands of times per sequence. */
function ok(cond: boolean, what: string): asserts cond {
  if (!cond) throw new Error(`invariant broken: ${what}`);
}

/** The shell's part, in memory: rows, runs, waiting requests, timers, one claim loop. */
class Model {
  readonly s: SlotScheduler;
  now = 0;
  due: number[] = [];
  private nextRow = 1;
  /** Runs holding a slot: a row id (background) or a sync request's id. */
  runs: { sync: boolean; id: number }[] = [];
  /** Rows run, each exactly once. */
  ran = new Set<number>();
  /** Waiting sync requests: scheduler id → deadline, in arrival order. */
  waiters = new Map<number, number>();
  order: number[] = [];
  granted: number[] = [];
  refused = 0;
  claim: { want: number } | null = null;
  deferAt: number | null = null;
  /** Reservations of the outbox writer: slots held, rows not written yet. */
  reservations: number[] = [];

  constructor(readonly opts: Options) {
    this.s = new SlotScheduler(opts);
    this.s.start();
  }

  private onGrant(ids: readonly number[]) {
    for (const id of ids) {
      ok(this.waiters.has(id), "a granted request was waiting");
      // Oldest first: the granted request is the oldest still waiting.
      ok(this.order[0] === id, "grants go oldest first");
      this.order.shift();
      this.waiters.delete(id);
      this.granted.push(id);
      this.runs.push({ sync: true, id });
    }
  }
  private onFreed(f: Freed) {
    this.onGrant(f.grant);
    if (f.wake) this.wake();
  }
  /** Rows the claim returned beyond its slots, or that a stopped dispatcher will not run. */
  private giveBack(ids: readonly number[]) {
    this.due.push(...ids);
  }
  private begin(ids: number[]) {
    if (this.s.stopped) {
      this.onGrant(this.s.givenBack(ids.length));
      this.giveBack(ids);
      return;
    }
    for (const id of ids) {
      ok(!this.ran.has(id), "a row runs once");
      this.ran.add(id);
      this.runs.push({ sync: false, id });
    }
  }
  /** One pass of the shell's claim loop until it awaits a claim or ends. */
  private loop() {
    for (;;) {
      const step = this.s.nextClaim();
      if (step.kind === "claim") {
        if (step.cancelDefer) this.deferAt = null;
        this.claim = { want: step.want };
        return;
      }
      if (step.kind === "defer" && step.arm) {
        ok(this.deferAt === null, "one deferral timer at a time");
        this.deferAt = this.now + step.ms;
      }
      if (this.s.claimLoopEnded()) {
        if (this.s.wake()) continue;
      }
      return;
    }
  }
  wake() {
    if (this.s.wake()) this.loop();
  }
  private afterClaim() {
    if (this.s.claimAgain) return this.loop();
    if (this.s.claimLoopEnded()) this.wake();
  }

  apply(c: Cmd) {
    switch (c.t) {
      case "sync": {
        const waitingBefore = this.waiters.size;
        const d = this.s.syncArrives();
        if (d.kind === "run") {
          // Never ahead of a request already waiting.
          ok(waitingBefore === 0, "a new request never overtakes a waiting one");
          this.runs.push({ sync: true, id: -1 });
        } else if (d.kind === "wait") {
          this.waiters.set(d.id, this.now + d.ms);
          this.order.push(d.id);
        } else {
          this.due.push(this.nextRow++); // goes in unclaimed
          this.wake();
        }
        break;
      }
      case "end": {
        if (this.runs.length === 0) break;
        const [r] = this.runs.splice(c.pick % this.runs.length, 1);
        this.onFreed(this.s.runEnded(r?.sync ?? false));
        break;
      }
      case "wake":
        this.wake();
        break;
      case "enqueue":
        for (let i = 0; i < c.n; i++) this.due.push(this.nextRow++);
        this.wake();
        break;
      case "claimReturns": {
        if (!this.claim) break;
        const { want } = this.claim;
        this.claim = null;
        const got = Math.min(want, this.due.length, c.pick % (want + 1) === 0 ? want : c.pick % (want + 1));
        const rows = this.due.splice(0, got);
        const r = this.s.claimReturned(want, got);
        ok(r.keep + r.giveBack === got, "every claimed row is run or given back");
        this.giveBack(rows.slice(r.keep));
        this.onGrant(r.grant);
        this.begin(rows.slice(0, r.keep));
        this.afterClaim();
        break;
      }
      case "claimFails": {
        if (!this.claim) break;
        const { want } = this.claim;
        this.claim = null;
        this.onGrant(this.s.claimReturned(want, 0, true).grant);
        this.s.claimLoopEnded();
        break;
      }
      case "advance": {
        this.now += c.ms;
        for (const id of [...this.order]) {
          const at = this.waiters.get(id) as number;
          if (at > this.now) continue;
          ok(this.s.syncWaitExpired(id), "an expired wait was still waiting");
          this.waiters.delete(id);
          this.order.splice(this.order.indexOf(id), 1);
          this.refused++;
          this.due.push(this.nextRow++); // its row goes in unclaimed
        }
        if (this.deferAt !== null && this.deferAt <= this.now) {
          this.deferAt = null;
          this.s.deferElapsed();
          this.wake();
        }
        break;
      }
      case "reserve": {
        const k = this.s.reserve(c.n);
        ok(k <= c.n, "reserve gives at most what was asked");
        if (k > 0) this.reservations.push(k);
        break;
      }
      case "written": {
        if (this.reservations.length === 0) break;
        const [k] = this.reservations.splice(c.pick % this.reservations.length, 1) as [number];
        // The writer wrote some of the reserved rows; the rest were not needed.
        const written = c.of % (k + 1);
        if (written < k) this.onFreed(this.s.unreserve(k - written));
        const rows = Array.from({ length: written }, () => this.nextRow++);
        this.s.reservedWritten(written);
        this.begin(rows);
        break;
      }
      case "stop":
        for (const id of this.s.stop()) {
          this.waiters.delete(id);
          this.order.splice(this.order.indexOf(id), 1);
          this.refused++;
        }
        this.deferAt = null;
        break;
      case "restart":
        if (this.s.stopped) {
          this.s.start();
          this.wake();
        }
        break;
    }
    this.check();
  }

  check() {
    const s = this.s;
    const reserved = this.reservations.reduce((a, b) => a + b, 0);
    // The scheduler's counts are the shell's.
    ok(s.running === this.runs.length + reserved, "running counts the runs and reservations");
    ok(
      s.background === this.runs.filter((r) => !r.sync).length + reserved,
      "background counts background runs",
    );
    ok(s.reserved === reserved, "reserved");
    ok(s.waiting === this.waiters.size, "waiting");
    ok(s.claiming >= 0 && (this.claim !== null || s.claiming === 0), "claiming only with a claim in flight");
    // Running plus claiming never above the maximum; background never above its share.
    ok(s.running + s.claiming <= s.max, "running + claiming <= max");
    ok(s.background + s.claiming <= s.backgroundMax, "background within its share");
    // No slot stays idle while a sync request waits for one.
    ok(this.waiters.size === 0 || s.free === 0, "no free slot while a request waits");
  }

  /** Every run ends, every claim returns, every timer fires: nothing is left over. */
  drain() {
    for (let i = 0; i < 100_000 && (this.runs.length > 0 || this.claim || this.waiters.size > 0); i++) {
      if (this.claim) this.apply({ t: "claimReturns", pick: 0 });
      else if (this.runs.length > 0) this.apply({ t: "end", pick: 0 });
      else this.apply({ t: "advance", ms: 1000 });
    }
    while (this.reservations.length > 0) this.apply({ t: "written", pick: 0, of: 0 });
    for (let i = 0; i < 100_000 && (this.runs.length > 0 || this.claim); i++) {
      if (this.claim) this.apply({ t: "claimReturns", pick: 0 });
      else this.apply({ t: "end", pick: 0 });
      if (!this.claim && this.runs.length === 0) this.apply({ t: "advance", ms: CLAIM_DEFER_MS });
    }
  }
}

describe("slot scheduler", () => {
  it("holds its invariants over random event sequences", () => {
    fc.assert(
      fc.property(options, fc.array(cmd, { maxLength: 300 }), (opts, cmds) => {
        const m = new Model(opts);
        m.wake();
        for (const c of cmds) m.apply(c);
        m.drain();
        // Every waiting request was served or refused at its deadline (none starves).
        expect(m.waiters.size).toBe(0);
        // Every slot came back; every row ran once or is still due (given back), never both.
        expect([m.s.running, m.s.background, m.s.claiming, m.s.reserved]).toEqual([0, 0, 0, 0]);
        for (const id of m.due) expect(m.ran.has(id)).toBe(false);
        // Not stopped: the backlog drains entirely (the claim loop ran every row).
        if (!m.s.stopped) {
          for (let i = 0; i < 10_000 && m.due.length > 0; i++) {
            m.apply({ t: "advance", ms: CLAIM_DEFER_MS });
            m.wake();
            m.drain();
          }
          expect(m.due).toEqual([]);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("a waiting request gets the first slot that frees, before a claim", () => {
    const s = new SlotScheduler({ max: 2, syncSlots: 0, syncWaitMs: 500 });
    s.start();
    expect(s.syncArrives()).toEqual({ kind: "run" });
    expect(s.syncArrives()).toEqual({ kind: "run" });
    const w = s.syncArrives();
    expect(w).toEqual({ kind: "wait", id: 1, ms: 500 });
    expect(s.wake()).toBe(true);
    expect(s.nextClaim()).toEqual({ kind: "none" });
    expect(s.claimLoopEnded()).toBe(false);
    expect(s.runEnded(true)).toEqual({ grant: [1], wake: false });
    expect(s.syncWaitExpired(1)).toBe(false);
  });

  it("keeps a quarter of the slots for sync requests and defers small claims under load", () => {
    const s = new SlotScheduler({ max: 32 });
    s.start();
    expect(s.wake()).toBe(true);
    expect(s.nextClaim()).toEqual({ kind: "claim", want: 24, cancelDefer: false });
    expect(s.claimReturned(24, 24)).toEqual({ keep: 24, giveBack: 0, grant: [] });
    expect(s.claimAgain).toBe(true);
    expect(s.nextClaim()).toEqual({ kind: "none" });
    expect(s.runEnded(false)).toEqual({ grant: [], wake: true });
    // One slot free with 23 background runs in flight: wait for more (at most CLAIM_DEFER_MS).
    expect(s.nextClaim()).toEqual({ kind: "defer", arm: true, ms: CLAIM_DEFER_MS });
    s.deferElapsed();
    expect(s.nextClaim()).toEqual({ kind: "claim", want: 1, cancelDefer: false });
    expect(s.claimReturned(1, 1)).toEqual({ keep: 1, giveBack: 0, grant: [] });
  });

  it("sync requests take the slots of a claim in flight; the claim gives back its rows", () => {
    const s = new SlotScheduler({ max: 2, syncSlots: 0, syncWaitMs: 500 });
    s.start();
    expect(s.wake()).toBe(true);
    expect(s.nextClaim()).toEqual({ kind: "claim", want: 2, cancelDefer: false });
    expect(s.syncArrives()).toEqual({ kind: "run" });
    expect(s.syncArrives()).toEqual({ kind: "run" });
    expect(s.syncArrives()).toEqual({ kind: "wait", id: 1, ms: 500 });
    expect(s.claimReturned(2, 2)).toEqual({ keep: 0, giveBack: 2, grant: [] });
    expect(s.runEnded(true)).toEqual({ grant: [1], wake: false });
  });
});
