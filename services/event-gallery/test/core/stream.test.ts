import { FakeClock } from "@app/kit/clock";
import { captureLogger } from "@app/kit/logger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEventBus } from "../../src/realtime/bus.js";
import { createStreamHub } from "../../src/realtime/hub.js";
import { createStreamTickets } from "../../src/realtime/tickets.js";
import { galleryDb } from "../scale/db.js";
import { type Gallery, startGallery } from "./harness.js";

/**
 * Reads an SSE response body as text; `until` waits (bounded by real time, generously: a loaded
 * 2-core CI machine can take seconds to deliver a frame) for a substring.
 */
async function openStream(base: string, ticket: string) {
  const res = await fetch(`${base}/api/v1/stream?ticket=${encodeURIComponent(ticket)}`);
  let buf = "";
  const reader = res.body?.getReader();
  const decoder = new TextDecoder();
  return {
    res,
    text: () => buf,
    async until(needle: string, ms = 15_000): Promise<string> {
      const deadline = Date.now() + ms;
      while (!buf.includes(needle)) {
        if (!reader || Date.now() > deadline) throw new Error(`stream never showed ${needle}; got: ${buf}`);
        const chunk = await Promise.race([
          reader.read(),
          // real-time: a deadline that fails the wait with what the stream showed so far.
          new Promise<null>((r) => setTimeout(() => r(null), Math.max(1, deadline - Date.now()))),
        ]);
        if (chunk === null) continue;
        if (chunk.done) throw new Error(`stream ended before ${needle}; got: ${buf}`);
        buf += decoder.decode(chunk.value, { stream: true });
      }
      return buf;
    },
    close: () => reader?.cancel().catch(() => {}),
  };
}

describe("real-time stream", () => {
  let g: Gallery;
  let base: string;
  beforeAll(async () => {
    g = await startGallery();
    base = await g.built.app.listen({ port: 0, host: "127.0.0.1" });
  });
  afterAll(async () => {
    await g.close();
  });

  const ticketFor = async (token: string) => {
    const res = await g.call("POST", "/stream/ticket", { token });
    expect(res.statusCode).toBe(201);
    return res.json() as { ticket: string; expires_at: string };
  };

  it("issues 30 s single-use tickets and refuses bad, reused and expired ones with 401", async () => {
    const u = await g.join("Streamer");
    expect((await g.call("POST", "/stream/ticket")).statusCode).toBe(401);
    const t = await ticketFor(u.token);
    expect(t.expires_at).toBe(new Date(g.clock.now() + 30_000).toISOString());
    const bad = await fetch(`${base}/api/v1/stream?ticket=nope`);
    expect(bad.status).toBe(401);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe("invalid_ticket");
    expect((await fetch(`${base}/api/v1/stream`)).status).toBe(401);

    const s = await openStream(base, t.ticket);
    expect(s.res.status).toBe(200);
    expect(s.res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    await s.until(": connected");
    s.close();
    expect((await fetch(`${base}/api/v1/stream?ticket=${t.ticket}`)).status).toBe(401);

    const late = await ticketFor(u.token);
    await g.clock.advance(30_000);
    expect((await fetch(`${base}/api/v1/stream?ticket=${late.ticket}`)).status).toBe(401);

    // A logged-out session's ticket no longer opens a stream.
    const t2 = await ticketFor(u.token);
    await g.call("DELETE", "/session", { token: u.token });
    expect((await fetch(`${base}/api/v1/stream?ticket=${t2.ticket}`)).status).toBe(401);
  });

  it("delivers events by name, host-only events only to hosts, and pings every 25 s", async () => {
    const guest = await g.join("Listener");
    const host = await g.host("Host Listener");
    const gs = await openStream(base, (await ticketFor(guest.token)).ticket);
    const hs = await openStream(base, (await ticketFor(host.token)).ticket);
    await gs.until(": connected");
    await hs.until(": connected");

    g.built.ctx.bus.publish("like", { upload_id: "u1", like_count: 3 });
    const likeFrame = 'event: like\ndata: {"upload_id":"u1","like_count":3}\n\n';
    await gs.until(likeFrame);
    await hs.until(likeFrame);

    expect((await g.call("POST", "/recover/request", { body: { name: "Listener" } })).statusCode).toBe(204);
    await hs.until("event: pin-reset-requested");
    g.built.ctx.bus.publish("upload-removed", { upload_id: "marker-1" });
    await gs.until("marker-1");
    expect(gs.text()).not.toContain("pin-reset-requested");

    // Demoted: host-only events stop at once, on the already open stream.
    const adminToken = await g.adminToken();
    const as = await openStream(base, (await ticketFor(adminToken)).ticket);
    await as.until(": connected");
    await g.call("POST", `/host/users/${host.id}/demote`, { token: adminToken });
    g.built.ctx.bus.publish("pin-reset", { user_id: "after-demotion" }, { hostsOnly: true });
    // Host-only delivery writes to every eligible stream in one pass: once the admin has it, the
    // demoted host would have had it written before the marker that follows.
    await as.until("after-demotion");
    g.built.ctx.bus.publish("upload-removed", { upload_id: "marker-2" });
    await hs.until("marker-2");
    expect(hs.text()).not.toContain("after-demotion");
    as.close();

    expect(gs.text()).not.toContain(": ping");
    await g.clock.advance(25_000);
    await gs.until(": ping");
    gs.close();
    hs.close();
  });

  it("caps tickets per session and refuses with 429 ticket_store_full, then frees them on expiry", async () => {
    const u = await g.join("Ticket Hoarder");
    for (let i = 0; i < 5; i++) await ticketFor(u.token);
    const full = await g.call("POST", "/stream/ticket", { token: u.token });
    expect(full.statusCode).toBe(429);
    expect(full.json().error.code).toBe("ticket_store_full");
    expect(Number(full.headers["retry-after"])).toBeGreaterThan(0);
    await g.clock.advance(30_000);
    expect((await g.call("POST", "/stream/ticket", { token: u.token })).statusCode).toBe(201);
  });

  it("rate-limits ticket issue per user", async () => {
    const first = await g.call("POST", "/join", { body: { name: "Many Sessions", client_join_id: "ms-1" } });
    const tokens: string[] = [first.json().token];
    for (let i = 0; i < 6; i++)
      tokens.push(
        (await g.call("POST", "/join", { body: { name: "Many Sessions", client_join_id: "ms-1" } })).json()
          .token,
      );
    let limited = null;
    for (const token of tokens)
      for (let i = 0; i < 5; i++) {
        const res = await g.call("POST", "/stream/ticket", { token });
        if (res.statusCode === 429) limited = res;
      }
    expect(limited?.json().error.code).toBe("rate_limited");
    expect(limited?.headers["retry-after"]).toBeDefined();
  });
});

describe("shutdown with open streams", () => {
  it("ends every open stream when the app closes, instead of waiting on them", async () => {
    const g = await startGallery();
    const base = await g.built.app.listen({ port: 0, host: "127.0.0.1" });
    const u = await g.join("Last Viewer");
    const t = (await g.call("POST", "/stream/ticket", { token: u.token })).json().ticket;
    const s = await openStream(base, t);
    await s.until(": connected");
    const closing = g.close();
    // The stream ends (the read loop sees the end) and close() completes.
    await expect(s.until("never-sent", 10_000)).rejects.toThrow(/stream ended/);
    await closing;
  });
});

describe("ticket store bounds", () => {
  it("refuses new tickets at the total cap instead of evicting, and prunes expired ones on issue", async () => {
    const t = await galleryDb();
    try {
      await t.users("u1", "u2", "u3", "u4", "u5");
      const clock = new FakeClock();
      const store = createStreamTickets({ db: t.database.db, clock, maxTotal: 3, maxPerSession: 5 });
      const a = await store.issue("u1", "s1");
      await store.issue("u2", "s2");
      clock.set(clock.now() + 10_000);
      await store.issue("u3", "s3");
      await expect(store.issue("u4", "s4")).rejects.toThrowError(
        expect.objectContaining({ status: 429, code: "ticket_store_full" }),
      );
      expect(await store.redeem(a.ticket)).toEqual({ userId: "u1", sessionId: "s1" });
      expect(await store.redeem(a.ticket)).toBeNull();
      clock.set(clock.now() + 20_000);
      // s2's ticket expired at +30 s: pruned on this issue, which then fits.
      await store.issue("u5", "s5");
      const left = await t.database.db.selectFrom("tickets").select("user_id").orderBy("user_id").execute();
      expect(left.map((r) => r.user_id)).toEqual(["u3", "u5"]);
    } finally {
      await t.cleanup();
    }
  });
});

describe("stream hub bound", () => {
  it("refuses a new stream with 503 + Retry-After at its cap and frees the slot when one closes", async () => {
    const bus = await createEventBus({ logger: captureLogger().logger });
    const hub = createStreamHub({
      logger: captureLogger().logger,
      bus,
      database: { db: null as never },
      maxStreams: 1,
    });
    const sent: string[] = [];
    let onClose: () => void = () => {};
    const fake = {
      send: (e: string) => sent.push(e) > 0,
      onClose: (fn: () => void) => {
        onClose = fn;
      },
      close: () => onClose(),
    };
    hub.assertCapacity();
    hub.add("u1", fake as never);
    expect(() => hub.assertCapacity()).toThrowError(
      expect.objectContaining({ status: 503, headers: { "retry-after": "5" } }),
    );
    bus.publish("like", { upload_id: "x" });
    expect(sent).toEqual(["like"]);
    fake.close();
    expect(hub.size()).toBe(0);
    hub.assertCapacity();
  });
});
