import { FakeClock } from "@app/kit/clock";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createDownloadTickets,
  TICKET_CAP,
  TICKET_TTL_MS,
  TICKETS_PER_SESSION,
} from "../../src/export/tickets.js";
import { type Gallery, startGallery } from "../core/harness.js";
import { galleryDb } from "../scale/db.js";

describe("event transitions under concurrency", () => {
  let g: Gallery;
  let admin: string;
  beforeAll(async () => {
    g = await startGallery();
    admin = await g.adminToken();
  });
  afterAll(async () => {
    await g.close();
  });

  it("two simultaneous releases: one wins, the other gets 409, the epoch moves once", async () => {
    const res = await Promise.all([
      g.call("POST", "/host/event/release", { token: admin }),
      g.call("POST", "/host/event/release", { token: admin }),
    ]);
    expect(res.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    const event = (await g.call("GET", "/host/event", { token: admin })).json();
    expect(event.export_epoch).toBe(1);
    const jobs = await g.built.ctx.database.db.selectFrom("export_jobs").selectAll().execute();
    expect(jobs.map((j) => [j.kind, j.status, j.epoch]).sort()).toEqual([
      ["html", "pending", 1],
      ["zip", "pending", 1],
    ]);
  });

  it("records each transition in the host audit", async () => {
    await g.call("POST", "/host/event/reopen", { token: admin });
    const rows = await g.built.ctx.database.db
      .selectFrom("host_audit")
      .select("action")
      .where("target_type", "=", "event")
      .orderBy("created_at")
      .execute();
    expect(rows.map((r) => r.action)).toEqual(["event.release", "event.reopen"]);
  });

  it("a download needs GET: HEAD does not spend a ticket", async () => {
    const res = await g.built.app.inject({ method: "HEAD", url: "/api/v1/export/zip/download?ticket=x" });
    expect(res.statusCode).toBe(404);
  });
});

describe("download ticket store", () => {
  let t: Awaited<ReturnType<typeof galleryDb>>;
  beforeAll(async () => {
    t = await galleryDb();
    await t.users("u1", "u", "new");
    const now = new Date().toISOString();
    const xs = Array.from({ length: TICKET_CAP }, (_, i) => ({
      id: `x${i}`,
      display_name: `x${i}`,
      display_name_key: `x${i}`,
      created_at: now,
      updated_at: now,
    }));
    for (let i = 0; i < xs.length; i += 200)
      await t.database.db
        .insertInto("users")
        .values(xs.slice(i, i + 200))
        .execute();
  });
  afterAll(async () => t.cleanup());

  it("is bounded per session and in total, refusing rather than evicting; expired tickets are pruned", async () => {
    const clock = new FakeClock();
    const store = createDownloadTickets({ db: t.database.db, clock });
    for (let i = 0; i < TICKETS_PER_SESSION; i++)
      await store.issue({ kind: "zip", userId: "u1", sessionId: "s1" });
    await expect(store.issue({ kind: "zip", userId: "u1", sessionId: "s1" })).rejects.toThrow(/Too many/);
    expect(await store.outstanding("u1")).toBe(TICKETS_PER_SESSION);
    // Fill the store to its cap in bulk (other sessions' live tickets).
    const filler = Array.from({ length: TICKET_CAP - TICKETS_PER_SESSION }, (_, i) => ({
      ticket_hash: `filler-${i}`,
      purpose: "download" as const,
      kind: "html",
      user_id: `x${i}`,
      session_id: `other-${i}`,
      expires_at: clock.now() + TICKET_TTL_MS,
    }));
    for (let i = 0; i < filler.length; i += 200)
      await t.database.db
        .insertInto("tickets")
        .values(filler.slice(i, i + 200))
        .execute();
    let refused: unknown = null;
    try {
      await store.issue({ kind: "zip", userId: "new", sessionId: "new" });
    } catch (err) {
      refused = err;
    }
    expect(refused).toMatchObject({ status: 429, headers: { "retry-after": String(TICKET_TTL_MS / 1000) } });
    clock.set(clock.now() + TICKET_TTL_MS);
    // Issuing prunes the expired ones, so there is room again.
    const { ticket } = await store.issue({ kind: "zip", userId: "new", sessionId: "new" });
    expect(await store.outstanding("u1")).toBe(0);
    expect(await store.redeem(ticket, "html")).toBeNull();
  });

  it("redeems once, only for its kind, only before it expires", async () => {
    const clock = new FakeClock();
    const store = createDownloadTickets({ db: t.database.db, clock });
    const a = await store.issue({ kind: "zip", userId: "u", sessionId: "s" });
    expect(await store.redeem(a.ticket, "zip")).toMatchObject({ userId: "u", sessionId: "s", kind: "zip" });
    expect(await store.redeem(a.ticket, "zip")).toBeNull();
    const b = await store.issue({ kind: "zip", userId: "u", sessionId: "s" });
    clock.set(clock.now() + TICKET_TTL_MS);
    expect(await store.redeem(b.ticket, "zip")).toBeNull();
  });
});
