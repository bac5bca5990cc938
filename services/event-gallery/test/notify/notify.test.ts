import { stat } from "node:fs/promises";
import { join } from "node:path";
import { createTestEnv } from "@app/kit/db/testing";
import { WEBHOOK_FORMATS } from "@app/kit/webhook-format";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { publicHttpsOnly } from "../../src/notify/endpoint.js";
import { createHostNotifier, type HostNotification, type HostNotifier } from "../../src/notify/service.js";
import { loadVapidKeys } from "../../src/notify/vapid.js";
import { type Gallery, startGallery } from "../core/harness.js";
import { setSettings, solidJpeg, upload } from "../media/helpers.js";
import { type BrowserKeys, browserKeys, decryptPush, startReceiver } from "./push-receiver.js";

/** Host notifications (issue 27 item 6, contract "Live event"): Web Push and the webhook. */
describe("host notifications", () => {
  let g: Gallery;
  let push: Awaited<ReturnType<typeof startReceiver>>;
  const gone = new Set<string>();
  // The test's push service is plain http on loopback; production accepts only https (endpoint.ts).
  const loopback = (u: URL) => u.protocol === "http:" && u.hostname === "127.0.0.1";

  beforeAll(async () => {
    push = await startReceiver((path) => (gone.has(path) ? 410 : 201));
    g = await startGallery({ deps: { pushEndpointAllowed: loopback } });
    await setSettings(g, { premoderation: true });
  });
  afterAll(async () => {
    await g?.close();
    await push?.close();
  });

  const notifier = () => g.built.ctx.notify as HostNotifier;
  const subscribe = async (token: string, path: string, b: BrowserKeys = browserKeys()) => {
    const res = await g.call("POST", "/host/push/subscriptions", {
      token,
      body: { endpoint: `${push.url}${path}`, keys: b.keys },
    });
    return { res, b };
  };
  /** The decrypted payloads that reached `path` since request number `from`. */
  const payloadsAt = (path: string, b: BrowserKeys, from = 0) =>
    push.got
      .slice(from)
      .filter((r) => r.path === path)
      .map((r) => JSON.parse(decryptPush(r.body, b)) as HostNotification);
  const pendingUpload = async (token: string) => {
    const res = await upload(g, token, await solidJpeg());
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().upload.approval).toBe("pending");
  };

  it("serves one VAPID key, kept under DATA_DIR with mode 0600, the same for racing processes", async () => {
    const res = await g.call("GET", "/push/key");
    expect(res.statusCode).toBe(200);
    const key = res.json().public_key as string;
    expect(Buffer.from(key, "base64url")).toHaveLength(65);
    const file = join(g.dataDir, "vapid-keys.json");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await loadVapidKeys(g.dataDir)).publicKey).toBe(key);

    const fresh = await createTestEnv("gallery_vapid");
    try {
      const all = await Promise.all([1, 2, 3, 4].map(() => loadVapidKeys(fresh.dataDir)));
      expect(new Set(all.map((k) => k.publicKey)).size).toBe(1);
    } finally {
      await fresh.cleanup();
    }
  });

  it("lets only hosts subscribe, and only to a valid subscription", async () => {
    const guest = await g.join("Push Guest");
    expect((await subscribe(guest.token, "/guest")).res.statusCode).toBe(403);
    const host = await g.host("Push Checker");
    const bad = await g.call("POST", "/host/push/subscriptions", {
      token: host.token,
      body: { endpoint: `${push.url}/x`, keys: { p256dh: "AAAA", auth: browserKeys().keys.auth } },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.code).toBe("invalid_subscription");
    const missing = await g.call("POST", "/host/push/subscriptions", {
      token: host.token,
      body: { endpoint: "x" },
    });
    expect([400, 422]).toContain(missing.statusCode);
    // The production rule: a push service's https address, never loopback or bare addresses.
    expect(publicHttpsOnly(new URL("https://fcm.googleapis.com/fcm/send/abc"))).toBe(true);
    for (const u of [
      "http://push.example.com/x",
      "https://127.0.0.1/x",
      "https://[::1]/x",
      "https://localhost/x",
      "https://10.0.0.1/x",
      "https://intranet/x",
    ])
      expect(publicHttpsOnly(new URL(u)), u).toBe(false);
  });

  it("sends encrypted 'uploads waiting' at most once a minute per subscription, then the batch", async () => {
    const host = await g.host("Push Host");
    const { res, b } = await subscribe(host.token, "/host-a");
    expect(res.statusCode, res.body).toBe(201);
    const guest = await g.join("Push Uploader");
    const from = push.got.length;

    await pendingUpload(guest.token);
    await notifier().idle();
    const [first] = payloadsAt("/host-a", b, from);
    expect(first).toEqual({
      kind: "uploads_pending",
      count: 1,
      title: "Uploads waiting",
      body: "1 upload is waiting for approval.",
      url: "/host",
    });
    const req = push.got.filter((r) => r.path === "/host-a").at(-1);
    expect(req?.headers["content-encoding"]).toBe("aes128gcm");
    const key = (await g.call("GET", "/push/key")).json().public_key;
    expect(req?.headers.authorization).toMatch(new RegExp(`^vapid t=[\\w-]+\\.[\\w-]+\\.[\\w-]+, k=${key}$`));

    // Two more within the minute: nothing yet, however many processes ask.
    await pendingUpload(guest.token);
    await g.clock.advance(30_000);
    await pendingUpload(guest.token);
    await Promise.all([notifier().flushPending(), notifier().flushPending()]);
    await notifier().idle();
    expect(payloadsAt("/host-a", b, from)).toHaveLength(1);

    // The minute is over: one notification carries the batch.
    await g.clock.advance(31_000);
    await Promise.all([notifier().flushPending(), notifier().flushPending()]);
    expect(payloadsAt("/host-a", b, from).map((p) => p.count)).toEqual([1, 3]);

    // Nothing new: a quiet queue is not announced again.
    await g.clock.advance(120_000);
    await notifier().flushPending();
    expect(payloadsAt("/host-a", b, from)).toHaveLength(2);
    await g.call("POST", "/host/pending:approve", { token: host.token, body: { all: true } });
  });

  it("tells hosts when a guest asks for a PIN reset; demoted hosts hear nothing more", async () => {
    const host = await g.host("Pin Host");
    const { b } = await subscribe(host.token, "/host-pin");
    const other = await g.host("Pin Host Two");
    const { b: b2 } = await subscribe(other.token, "/host-pin-2");
    await g.join("Forgets Pin");
    const from = push.got.length;
    expect((await g.call("POST", "/recover/request", { body: { name: "Forgets Pin" } })).statusCode).toBe(
      204,
    );
    await notifier().idle();
    const [n] = payloadsAt("/host-pin", b, from);
    expect(n).toEqual({
      kind: "pin_reset_requested",
      count: 1,
      title: "PIN reset requested",
      body: "A guest asked for a new PIN.",
      url: "/host",
    });
    expect(payloadsAt("/host-pin-2", b2, from)).toHaveLength(1);

    const admin = await g.adminToken();
    expect((await g.call("POST", `/host/users/${other.id}/demote`, { token: admin })).statusCode).toBe(200);
    const again = push.got.length;
    await g.call("POST", "/recover/request", { body: { name: "Forgets Pin" } });
    await notifier().idle();
    expect(payloadsAt("/host-pin", b, again)).toHaveLength(1);
    expect(payloadsAt("/host-pin-2", b2, again)).toHaveLength(0);

    // Unsubscribing stops it.
    const del = await g.call("DELETE", "/host/push/subscriptions", {
      token: host.token,
      body: { endpoint: `${push.url}/host-pin` },
    });
    expect(del.statusCode).toBe(204);
    const third = push.got.length;
    await g.call("POST", "/recover/request", { body: { name: "Forgets Pin" } });
    await notifier().idle();
    expect(payloadsAt("/host-pin", b, third)).toHaveLength(0);
  });

  it("removes a subscription the push service says is gone (410)", async () => {
    const host = await g.host("Gone Host");
    await subscribe(host.token, "/gone");
    gone.add("/gone");
    await g.join("Forgets Again");
    await g.call("POST", "/recover/request", { body: { name: "Forgets Again" } });
    await notifier().idle();
    const rows = await g.built.ctx.database.db
      .selectFrom("push_subscriptions")
      .select("endpoint")
      .where("endpoint", "=", `${push.url}/gone`)
      .execute();
    expect(rows).toEqual([]);
  });

  it("sends the same to the webhook in each of the four formats", async () => {
    const hook = await startReceiver(() => 200);
    try {
      const ctx = g.built.ctx;
      const keys = await loadVapidKeys(g.dataDir);
      for (const format of WEBHOOK_FORMATS) {
        const n = createHostNotifier({
          database: ctx.database,
          clock: ctx.clock,
          logger: ctx.logger,
          limiter: ctx.limiter,
          keys,
          allowEndpoint: () => false,
          subject: "mailto:test@gallery.invalid",
          webhook: { url: `${hook.url}/${format}`, format },
        });
        n.pinResetRequested();
        await n.idle();
      }
      const got = await hook.waitFor(4);
      const by = (f: string) => got.find((r) => r.path === `/${f}`);
      const json = JSON.parse(String(by("json")?.body));
      expect(json).toEqual({
        event: "pin_reset_requested",
        title: "PIN reset requested",
        text: "A guest asked for a new PIN.",
        message: "A guest asked for a new PIN.",
        at: g.clock.iso(),
      });
      expect(JSON.parse(String(by("slack")?.body))).toEqual({
        text: "PIN reset requested\nA guest asked for a new PIN.",
      });
      expect(JSON.parse(String(by("gotify")?.body))).toEqual({
        title: "PIN reset requested",
        message: "A guest asked for a new PIN.",
        priority: 5,
      });
      const ntfy = by("ntfy");
      expect(String(ntfy?.body)).toBe("A guest asked for a new PIN.");
      expect(ntfy?.headers["content-type"]).toMatch(/^text\/plain/);
      expect(ntfy?.headers).toMatchObject({ title: "PIN reset requested", tags: "key", priority: "default" });
    } finally {
      await hook.close();
    }
  });

  it("batches the webhook's 'uploads waiting' to once a minute as well", async () => {
    const hook = await startReceiver(() => 200);
    const env = await createTestEnv("gallery_notify_hook");
    const h = await startGallery({
      keepEnv: env,
      env: { GALLERY_NOTIFY_WEBHOOK_URL: `${hook.url}/hook`, GALLERY_NOTIFY_WEBHOOK_FORMAT: "gotify" },
    });
    try {
      await setSettings(h, { premoderation: true });
      const guest = await h.join("Hook Uploader");
      const n = h.built.ctx.notify as HostNotifier;
      for (let i = 0; i < 2; i++) {
        expect((await upload(h, guest.token, await solidJpeg())).statusCode).toBe(201);
        await h.clock.advance(1_000);
      }
      await n.idle();
      expect(hook.got.map((r) => JSON.parse(String(r.body)).message)).toEqual([
        "1 upload is waiting for approval.",
      ]);
      await h.clock.advance(61_000);
      await n.flushPending();
      expect(hook.got.map((r) => JSON.parse(String(r.body)).message)).toEqual([
        "1 upload is waiting for approval.",
        "2 uploads are waiting for approval.",
      ]);
    } finally {
      await h.close();
      await env.cleanup();
      await hook.close();
    }
  });
});
