import { createTestEnv, testBackend } from "@app/kit/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gallery, recordEvents, startGallery } from "../core/harness.js";
import { addUpload } from "../export/fixtures.js";
import { solidJpeg, upload } from "../media/helpers.js";

/**
 * Two gallery instances (each with its own pool, LISTEN connection, limiter, ticket stores and
 * workers; nothing shared but the PostgreSQL database and DATA_DIR) behave as one service.
 * Only PostgreSQL: an embedded SQLite database belongs to one process.
 */
describe.runIf(testBackend() === "postgres")("two processes on one PostgreSQL", () => {
  let env: Awaited<ReturnType<typeof createTestEnv>>;
  let a: Gallery;
  let b: Gallery;
  let baseA: string;
  let baseB: string;
  beforeAll(async () => {
    env = await createTestEnv("gallery_two");
    a = await startGallery({ keepEnv: env });
    b = await startGallery({ keepEnv: env });
    baseA = await a.built.app.listen({ port: 0, host: "127.0.0.1" });
    baseB = await b.built.app.listen({ port: 0, host: "127.0.0.1" });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await env?.cleanup();
  });

  it("join on A, upload on B: A's stream sees it", async () => {
    const guest = await a.join("Streams On A");
    const t = (await a.call("POST", "/stream/ticket", { token: guest.token })).json().ticket as string;
    const res = await fetch(`${baseA}/api/v1/stream?ticket=${encodeURIComponent(t)}`);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let text = "";
    const decoder = new TextDecoder();
    const readUntil = async (needle: string) => {
      while (!text.includes(needle)) {
        const chunk = await reader.read();
        if (chunk.done) throw new Error(`stream ended: ${text}`);
        text += decoder.decode(chunk.value, { stream: true });
      }
    };
    await readUntil(": connected");
    const seen = readUntil("event: new-upload");
    const posted = await upload(b, guest.token, await solidJpeg());
    expect(posted.statusCode, posted.body).toBe(201);
    const id = posted.json().upload.id as string;
    await Promise.race([
      seen,
      // real-time: a deadline that fails the test with what A's stream showed.
      new Promise((_, rej) => setTimeout(() => rej(new Error(`no new-upload on A: ${text}`)), 15_000)),
    ]);
    expect(text).toContain(id);
    await reader.cancel();
  });

  it("a stream ticket issued by A works once on B, never twice", async () => {
    const guest = await a.join("Ticket Holder");
    const t = (await a.call("POST", "/stream/ticket", { token: guest.token })).json().ticket as string;
    const first = await fetch(`${baseB}/api/v1/stream?ticket=${encodeURIComponent(t)}`);
    expect(first.status).toBe(200);
    await first.body?.cancel();
    expect((await fetch(`${baseA}/api/v1/stream?ticket=${encodeURIComponent(t)}`)).status).toBe(401);
    expect((await fetch(`${baseB}/api/v1/stream?ticket=${encodeURIComponent(t)}`)).status).toBe(401);
  });

  it("the per-(IP, name) join bucket counts across both processes", async () => {
    const ip = "203.0.113.77";
    const codes: number[] = [];
    for (const g of [a, b, a, b, a, b])
      codes.push((await g.call("POST", "/join", { body: { name: "Bucket" }, ip })).statusCode);
    // 5 attempts per 60 s per (IP, name), every attempt counted: the first joins, then 409s, then 429.
    expect(codes).toEqual([201, 409, 409, 409, 409, 429]);
  });

  it("a ban on A is refused on B at the very next request; a setting changed on A applies on B", async () => {
    const admin = await a.adminToken();
    const guest = await a.join("Banned Across");
    const up = await addUpload(a, guest.id, { caption: "x" });
    expect((await b.call("PUT", `/upload/${up.id}/like`, { token: guest.token })).statusCode).toBe(200);
    expect((await a.call("POST", `/host/users/${guest.id}/ban`, { token: admin })).statusCode).toBe(200);
    expect((await b.call("PUT", `/upload/${up.id}/like`, { token: guest.token })).statusCode).toBe(403);

    expect((await b.call("GET", "/me/context", { token: admin })).json().event.name).toBe("Our Event");
    const patched = await a.call("PATCH", "/admin/config", {
      token: admin,
      body: { event_name: "Shared Name" },
    });
    expect(patched.statusCode).toBe(200);
    // B learns of the change over LISTEN/NOTIFY; wait for that notification (bounded generously:
    // a NOTIFY can take seconds on a loaded CI machine).
    await expect
      .poll(async () => (await b.call("GET", "/me/context", { token: admin })).json().event.name, {
        timeout: 15_000,
        interval: 20,
      })
      .toBe("Shared Name");
  });

  it("a demotion and a logout on A count on B's very next request, however warm B's caches are", async () => {
    const admin = await a.adminToken();
    const host = await a.join("Warm Host Across");
    expect((await a.call("POST", `/host/users/${host.id}/promote`, { token: admin })).statusCode).toBe(200);
    // Warm B: the token's signature, the media token and the settings are cached there now.
    for (let i = 0; i < 3; i++) {
      expect((await b.call("GET", "/host/users", { token: host.token })).statusCode).toBe(200);
      expect((await b.call("GET", "/feed", { token: host.token })).statusCode).toBe(200);
    }
    expect((await a.call("POST", `/host/users/${host.id}/demote`, { token: admin })).statusCode).toBe(200);
    expect((await b.call("GET", "/host/users", { token: host.token })).statusCode).toBe(403);
    expect((await b.call("GET", "/me/context", { token: host.token })).json().user.role).toBe("guest");

    expect((await a.call("DELETE", "/session", { token: host.token })).statusCode).toBe(204);
    expect((await b.call("GET", "/feed", { token: host.token })).statusCode).toBe(401);
    expect((await b.call("GET", "/feed/delta?cursor=x", { token: host.token })).statusCode).toBe(401);
  });

  it("an unban on A counts on B at once; a logout on A kills the media credential B issued", async () => {
    const admin = await a.adminToken();
    const guest = await a.join("Media Across");
    const up = await addUpload(a, guest.id, { caption: "across" });
    // B issues (and caches) the session's media credential.
    const feed = (await b.call("GET", "/feed", { token: guest.token })).json();
    const item = feed.items.find((i: { id: string }) => i.id === up.id);
    const t = new URL(`http://x${item.original_url}`).searchParams.get("t") as string;
    const original = `/upload/${up.id}/original?t=${encodeURIComponent(t)}`;
    expect((await b.call("GET", original)).statusCode).toBe(200);

    expect((await a.call("POST", `/host/users/${guest.id}/ban`, { token: admin })).statusCode).toBe(200);
    expect((await b.call("PUT", `/upload/${up.id}/like`, { token: guest.token })).statusCode).toBe(403);
    expect((await a.call("POST", `/host/users/${guest.id}/unban`, { token: admin })).statusCode).toBe(200);
    expect((await b.call("PUT", `/upload/${up.id}/like`, { token: guest.token })).statusCode).toBe(200);

    expect((await a.call("DELETE", "/session", { token: guest.token })).statusCode).toBe(204);
    expect((await b.call("GET", original)).statusCode).toBe(401);
    expect((await a.call("GET", original)).statusCode).toBe(401);
  });

  it("a release on A builds each keepsake once; A's download ticket works once on B", async () => {
    const admin = await a.adminToken();
    const guest = await a.join("Keepsake Guest");
    await addUpload(a, guest.id, { caption: "for the keepsake" });
    const events = recordEvents(a);
    const ready = (kind: string) =>
      new Promise<void>((resolve) => {
        const stop = a.built.ctx.bus.subscribe((e, d) => {
          if (e === "export-ready" && d.kind === kind) {
            stop();
            resolve();
          }
        });
      });
    const both = Promise.all([ready("zip"), ready("html")]);
    expect((await a.call("POST", "/host/event/release", { token: admin })).statusCode).toBe(200);
    await both;
    // A second build needs a second claim, and a claim takes a pending row (pending -> running in
    // one conditional UPDATE): with every row done and none pending or running, none can follow.
    const jobs = await a.built.ctx.database.db
      .selectFrom("export_jobs")
      .select(["kind", "status"])
      .orderBy("kind")
      .execute();
    expect(jobs).toEqual([
      { kind: "html", status: "done" },
      { kind: "zip", status: "done" },
    ]);
    const builds = events.seen.filter((e) => e.event === "export-ready").map((e) => e.data.kind);
    expect(builds.sort()).toEqual(["html", "zip"]);
    events.stop();

    const t = await a.call("POST", "/export/ticket", { token: guest.token, body: { kind: "zip" } });
    expect(t.statusCode, t.body).toBe(201);
    const url = `/export/zip/download?ticket=${encodeURIComponent(t.json().ticket)}`;
    expect((await b.call("GET", url)).statusCode).toBe(200);
    expect((await a.call("GET", url)).statusCode).toBe(401);
    expect((await b.call("GET", url)).statusCode).toBe(401);
  });
});
