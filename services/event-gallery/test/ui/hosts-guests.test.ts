import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Gallery, recordEvents, release, startGallery } from "../core/harness.js";
import { multipart, setSettings, solidJpeg, solidPng, upload } from "../media/helpers.js";

/** Issue 14 server rules: pre-moderation, branding, public URL, keepsake estimate. */
describe("pre-moderation", () => {
  let g: Gallery;
  let host: { token: string; id: string };
  let ann: { token: string; id: string };
  let bob: { token: string; id: string };
  beforeEach(async () => {
    g = await startGallery();
    host = await g.host("Hilde");
    ann = await g.join("Ann");
    bob = await g.join("Bob");
  });
  afterEach(() => g.close());

  const feedIds = async (token: string, q = "") =>
    (await g.call("GET", `/feed${q}`, { token })).json().items.map((i: { id: string }) => i.id);

  it("is off by default: a guest's upload is approved and public at once", async () => {
    const res = await upload(g, ann.token, await solidJpeg());
    expect(res.statusCode).toBe(201);
    expect(res.json().upload.approval).toBe("approved");
    expect(await feedIds(bob.token)).toEqual([res.json().upload.id]);
  });

  it("when on, a guest's upload is seen only by its uploader (marked pending) and by hosts", async () => {
    await setSettings(g, { premoderation: true });
    const ev = recordEvents(g);
    const before = (await g.call("GET", "/feed", { token: bob.token })).json().delta_cursor;
    const res = await upload(g, ann.token, await solidJpeg(), [["client_upload_id", "k1"]]);
    expect(res.statusCode).toBe(201);
    const up = res.json().upload;
    expect(up.approval).toBe("pending");
    // The stream tells hosts only.
    expect(ev.seen.filter((e) => e.event === "upload-pending")).toEqual([
      { event: "upload-pending", data: { id: up.id, user_id: ann.id }, hostsOnly: true },
    ]);
    expect(ev.names()).not.toContain("new-upload");
    ev.stop();

    // Nowhere for others: feed, delta, uploaders, likes/comments, media, the keepsake estimate.
    // The uploader's own main feed keeps it in place, marked pending (issue 27).
    expect(await feedIds(bob.token)).toEqual([]);
    expect(await feedIds(ann.token)).toEqual([up.id]);
    expect((await g.call("GET", "/feed", { token: ann.token })).json().items[0].approval).toBe("pending");
    expect(await feedIds(bob.token)).toEqual([]);
    g.clock.advance(10_000);
    const delta = (await g.call("GET", `/feed/delta?cursor=${before}`, { token: bob.token })).json();
    expect([...delta.items, ...delta.changes].map((i: { id: string }) => i.id)).not.toContain(up.id);
    expect((await g.call("GET", "/uploaders", { token: bob.token })).json().uploaders).toEqual([]);
    expect((await g.call("POST", `/upload/${up.id}/like`, { token: bob.token })).statusCode).toBe(404);
    expect((await g.call("GET", `/upload/${up.id}/original`, { token: bob.token })).statusCode).toBe(404);
    expect((await g.call("GET", "/host/event", { token: host.token })).json().keepsake_estimate_bytes).toBe(
      0,
    );

    // The uploader sees it in "my uploads" and can load its media; so can a host.
    const mine = (await g.call("GET", "/feed?mine=1", { token: ann.token })).json();
    expect(mine.items.map((i: { id: string; approval: string }) => [i.id, i.approval])).toEqual([
      [up.id, "pending"],
    ]);
    expect((await g.call("GET", `/feed?mine=1`, { token: bob.token })).json().items).toEqual([]);
    expect((await g.call("GET", `/upload/${up.id}/original`, { token: ann.token })).statusCode).toBe(200);
    expect((await g.call("GET", `/upload/${up.id}/original`, { token: host.token })).statusCode).toBe(200);

    // The host queue; guests may not read it.
    expect((await g.call("GET", "/host/pending", { token: bob.token })).statusCode).toBe(403);
    const pending = (await g.call("GET", "/host/pending", { token: host.token })).json();
    expect(pending.items.map((i: { id: string }) => i.id)).toEqual([up.id]);
    expect(pending.next_cursor).toBeNull();
  });

  it("a host's own upload needs no approval", async () => {
    await setSettings(g, { premoderation: true });
    const res = await upload(g, host.token, await solidJpeg());
    expect(res.json().upload.approval).toBe("approved");
    expect(await feedIds(bob.token)).toEqual([res.json().upload.id]);
  });

  it("approve: the upload joins every feed, the stream says new-upload, the audit records it", async () => {
    await setSettings(g, { premoderation: true });
    const up = (await upload(g, ann.token, await solidJpeg())).json().upload;
    const cursor = (await g.call("GET", "/feed", { token: bob.token })).json().delta_cursor;
    expect((await g.call("POST", `/host/upload/${up.id}/approve`, { token: bob.token })).statusCode).toBe(
      403,
    );
    g.clock.advance(1_000);
    const ev = recordEvents(g);
    const res = await g.call("POST", `/host/upload/${up.id}/approve`, { token: host.token });
    expect(res.statusCode).toBe(200);
    expect(res.json().upload).toMatchObject({ id: up.id, approval: "approved" });
    expect(ev.seen).toEqual([
      { event: "new-upload", data: { id: up.id, user_id: ann.id }, hostsOnly: false },
    ]);
    ev.stop();
    expect(await feedIds(bob.token)).toEqual([up.id]);
    g.clock.advance(10_000);
    const delta = (await g.call("GET", `/feed/delta?cursor=${cursor}`, { token: bob.token })).json();
    expect([...delta.items, ...delta.changes].map((i: { id: string }) => i.id)).toContain(up.id);
    expect((await g.call("GET", "/host/pending", { token: host.token })).json().items).toEqual([]);
    // Approving again changes nothing.
    expect((await g.call("POST", `/host/upload/${up.id}/approve`, { token: host.token })).statusCode).toBe(
      200,
    );
    const audit = (await g.call("GET", "/host/audit", { token: host.token })).json().entries;
    expect(audit.filter((e: { action: string }) => e.action === "approve_upload")).toHaveLength(1);
  });

  it("reject is a takedown: gone for the uploader too, and the key stays claimed", async () => {
    await setSettings(g, { premoderation: true });
    const img = await solidJpeg();
    const up = (await upload(g, ann.token, img, [["client_upload_id", "same-key"]])).json().upload;
    expect((await g.call("POST", `/host/upload/${up.id}/reject`, { token: bob.token })).statusCode).toBe(403);
    expect((await g.call("POST", `/host/upload/${up.id}/reject`, { token: host.token })).statusCode).toBe(
      204,
    );
    expect((await g.call("GET", "/feed?mine=1", { token: ann.token })).json().items).toEqual([]);
    expect((await g.call("GET", "/host/pending", { token: host.token })).json().items).toEqual([]);
    const again = await upload(g, ann.token, img, [["client_upload_id", "same-key"]]);
    expect(again.statusCode).toBe(409);
    expect(again.json().error.code).toBe("removed_by_host");
    expect((await g.call("POST", `/host/upload/${up.id}/reject`, { token: host.token })).statusCode).toBe(
      404,
    );
    // The audit says "rejected", not "removed".
    const audit = (await g.call("GET", "/host/audit", { token: host.token })).json().entries;
    expect(audit.filter((e: { action: string; target: { id: string } }) => e.target.id === up.id)).toEqual([
      expect.objectContaining({ action: "reject_upload" }),
    ]);
  });

  it("reject of an approved upload is refused; unknown ids are 404", async () => {
    const up = (await upload(g, ann.token, await solidJpeg())).json().upload;
    const res = await g.call("POST", `/host/upload/${up.id}/reject`, { token: host.token });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe("not_pending");
    expect((await g.call("POST", "/host/upload/nope/approve", { token: host.token })).statusCode).toBe(404);
  });

  it("turning pre-moderation off approves nothing by itself", async () => {
    await setSettings(g, { premoderation: true });
    const up = (await upload(g, ann.token, await solidJpeg())).json().upload;
    await setSettings(g, { premoderation: false });
    expect(await feedIds(bob.token)).toEqual([]);
    expect((await g.call("GET", "/host/pending", { token: host.token })).json().items).toHaveLength(1);
    const later = (await upload(g, ann.token, await solidJpeg(10, 10))).json().upload;
    expect(await feedIds(bob.token)).toEqual([later.id]);
    expect(up.approval).toBe("pending");
  });

  it("pending uploads stay out of the keepsake estimate; an approval after release bumps the epoch", async () => {
    await setSettings(g, { premoderation: true });
    const up = (await upload(g, ann.token, await solidJpeg())).json().upload;
    await release(g);
    const before = (await g.call("GET", "/host/event", { token: host.token })).json();
    expect(before.keepsake_estimate_bytes).toBe(0);
    await g.call("POST", `/host/upload/${up.id}/approve`, { token: host.token });
    const after = (await g.call("GET", "/host/event", { token: host.token })).json();
    expect(after.keepsake_estimate_bytes).toBeGreaterThan(0);
    expect(after.export_epoch).toBe(before.export_epoch + 1);
  });
});

describe("keepsake estimate", () => {
  let g: Gallery;
  beforeEach(async () => {
    g = await startGallery();
  });
  afterEach(() => g.close());

  it("is the same before the release and after the builds are done (was 0 B)", async () => {
    const ann = await g.join("Ann");
    await upload(g, ann.token, await solidJpeg());
    const admin = await g.adminToken();
    const before = (await g.call("GET", "/host/event", { token: admin })).json().keepsake_estimate_bytes;
    expect(before).toBeGreaterThan(0);
    expect((await g.call("POST", "/host/event/release", { token: admin })).statusCode).toBe(200);
    await g.built.ctx.database.db.updateTable("export_jobs").set({ status: "done" }).execute();
    const after = (await g.call("GET", "/host/event", { token: admin })).json();
    expect(after.keepsake_estimate_bytes).toBe(before);
    expect(after.low_disk_warning).toBe(false);
  });
});

describe("branding and public URL", () => {
  let g: Gallery;
  afterEach(() => g.close());

  it("GET /event/public is open and carries the defaults, then the admin's settings", async () => {
    g = await startGallery({ env: { GALLERY_PUBLIC_URL: "https://party.example/" } });
    const res = await g.call("GET", "/event/public");
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      name: "Our Event",
      welcome_text_en: "",
      welcome_text_de: "",
      accent_color: "#ff7a59",
      cover_url: null,
      public_url: "https://party.example",
    });
    const admin = await g.adminToken();
    const patch = await g.call("PATCH", "/admin/config", {
      token: admin,
      body: {
        event_name: "Anna & Ben",
        welcome_text_en: "Welcome!",
        welcome_text_de: "Willkommen!",
        accent_color: "#3366CC",
        public_url: "http://10.0.0.5:3001",
      },
    });
    expect(patch.statusCode).toBe(200);
    expect((await g.call("GET", "/event/public")).json()).toMatchObject({
      name: "Anna & Ben",
      welcome_text_de: "Willkommen!",
      accent_color: "#3366cc",
      public_url: "http://10.0.0.5:3001",
    });
    await g.call("PATCH", "/admin/config", { token: admin, body: { public_url: null } });
    expect((await g.call("GET", "/event/public")).json().public_url).toBe("https://party.example");
  });

  it("refuses bad colours, URLs and types with the field named", async () => {
    g = await startGallery();
    const admin = await g.adminToken();
    for (const body of [
      { accent_color: "red" },
      { accent_color: "#12345" },
      { public_url: "javascript:alert(1)" },
      { public_url: "ftp://x" },
      { premoderation: "yes" },
      { welcome_text_en: "x".repeat(1001) },
    ]) {
      const res = await g.call("PATCH", "/admin/config", { token: admin, body });
      expect(res.statusCode, JSON.stringify(body)).toBe(422);
      expect(res.json().error.field).toBe(Object.keys(body)[0]);
    }
    expect((await g.call("GET", "/event/public")).json().public_url).toBeNull();
  });

  it("GALLERY_PUBLIC_URL and GALLERY_TIMEZONE are validated at start-up", async () => {
    const { loadEnv } = await import("@app/kit/config");
    const { envSpec } = await import("../../src/config.js");
    expect(() => loadEnv(envSpec, { GALLERY_PUBLIC_URL: "not a url" })).toThrow(/GALLERY_PUBLIC_URL/);
    expect(() => loadEnv(envSpec, { GALLERY_TIMEZONE: "Mars/Base" })).toThrow(/GALLERY_TIMEZONE/);
    expect(loadEnv(envSpec, {}).GALLERY_TIMEZONE).toBe("Europe/Berlin");
    g = await startGallery();
  });

  it("cover: admin only, images only, re-encoded, served openly, removable", async () => {
    g = await startGallery();
    const admin = await g.adminToken();
    const guest = await g.join("Ann");
    const put = async (token: string, data: Buffer, type = "image/png") => {
      const body = await multipart([], { data, type });
      return g.built.app.inject({
        method: "PUT",
        url: "/api/v1/admin/cover",
        headers: { ...body.headers, authorization: `Bearer ${token}` },
        payload: body.payload,
      });
    };
    expect((await g.call("GET", "/event/cover")).statusCode).toBe(404);
    expect((await put(guest.token, await solidPng())).statusCode).toBe(403);
    const bad = await put(admin, Buffer.from("plain text, not an image"), "text/plain");
    expect(bad.statusCode).toBe(415);
    const ok = await put(admin, await solidPng(300, 200));
    expect(ok.statusCode).toBe(200);
    const coverUrl = ok.json().event.cover_url as string;
    expect(coverUrl).toMatch(/^\/api\/v1\/event\/cover\?v=\d+$/);
    const img = await g.built.app.inject({ method: "GET", url: coverUrl });
    expect(img.statusCode).toBe(200);
    expect(img.headers["content-type"]).toBe("image/jpeg");
    expect(img.rawPayload.subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    expect((await g.call("DELETE", "/admin/cover", { token: guest.token })).statusCode).toBe(403);
    expect((await g.call("DELETE", "/admin/cover", { token: admin })).statusCode).toBe(204);
    expect((await g.call("GET", "/event/cover")).statusCode).toBe(404);
    expect((await g.call("GET", "/event/public")).json().cover_url).toBeNull();
  });
});
