import type { AddressInfo } from "node:net";
import { newId } from "@app/kit/ids";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_APP_ID } from "../../src/db/migrations/0001_control_plane.js";
import { appSigningKey, mintSubscriberToken } from "../../src/sdk/pubsub.js";
import { type Harness, startHarness } from "../control/harness.js";
import { seedApp } from "./seed.js";
import { openSseClient, type SseClient } from "./sse-client.js";

describe("realtime topics over SSE", () => {
  let h: Harness;
  let port: number;
  let shop: string;
  const clients: SseClient[] = [];

  const token = async (appId: string, topic: string, ttlS = 600) => {
    const { database, secretBox, clock } = h.built.ctx;
    const key = await appSigningKey(database, secretBox, appId, clock.iso());
    return mintSubscriberToken(key, appId, topic, Math.floor(clock.now() / 1000) + ttlS);
  };
  const publish = (appId: string, topic: string, message: unknown) =>
    h.built.ctx.database.writeTx((trx) =>
      h.built.engine.dispatch.events.pubsub(trx, { appId, topic, message, depth: 0 }),
    );
  const connect = async (path: string, host = "localhost", headers: Record<string, string> = {}) => {
    const c = await openSseClient(port, path, { host, ...headers });
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    h = await startHarness();
    shop = await seedApp(h.built, "shop");
    const now = h.built.ctx.clock.iso();
    await h.built.ctx.database.db
      .insertInto("app_domains")
      .values({ id: newId(), app_id: shop, host: "shop.test", kind: "exact", created_at: now })
      .execute();
    await h.built.ctx.routeTable.changed();
    for (const [app, name, external] of [
      [DEFAULT_APP_ID, "news", true],
      [DEFAULT_APP_ID, "ops", false],
      [shop, "news", true],
    ] as const) {
      const res = await h.call("POST", `/api/v1/admin/apps/${app}/topics`, { name, external });
      expect(res.statusCode).toBe(201);
    }
    await h.built.app.listen({ port: 0, host: "127.0.0.1" });
    port = (h.built.app.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await h.close();
  });

  it("answers 404 for an unknown host, an unknown topic and an internal topic; 401 without a valid token", async () => {
    const t = await token(DEFAULT_APP_ID, "news");
    expect((await connect(`/api/v1/realtime/topics/news?token=${t}`, "nowhere.test")).status).toBe(404);
    expect((await connect(`/api/v1/realtime/topics/nope?token=${t}`)).status).toBe(404);
    expect(
      (await connect(`/api/v1/realtime/topics/ops?token=${await token(DEFAULT_APP_ID, "ops")}`)).status,
    ).toBe(404);
    expect((await connect("/api/v1/realtime/topics/news")).status).toBe(401);
    expect((await connect("/api/v1/realtime/topics/news?token=garbage.token")).status).toBe(401);
    // A token for another topic, another app, or one that has expired.
    expect(
      (await connect(`/api/v1/realtime/topics/news?token=${await token(DEFAULT_APP_ID, "ops")}`)).status,
    ).toBe(401);
    expect((await connect(`/api/v1/realtime/topics/news?token=${await token(shop, "news")}`)).status).toBe(
      401,
    );
    expect(
      (await connect(`/api/v1/realtime/topics/news?token=${await token(DEFAULT_APP_ID, "news", -5)}`)).status,
    ).toBe(401);
  });

  it("delivers committed messages to the subscribers of that app's topic only", async () => {
    const sub = await connect(`/api/v1/realtime/topics/news?token=${await token(DEFAULT_APP_ID, "news")}`);
    expect(sub.status).toBe(200);
    const shopSub = await connect("/api/v1/realtime/topics/news", "shop.test", {
      authorization: `Bearer ${await token(shop, "news")}`,
    });
    expect(shopSub.status).toBe(200);

    await expect(
      h.built.ctx.database.writeTx(async (trx) => {
        await h.built.engine.dispatch.events.pubsub(trx, {
          appId: DEFAULT_APP_ID,
          topic: "news",
          message: { rolled: "back" },
          depth: 0,
        });
        throw new Error("abort");
      }),
    ).rejects.toThrow("abort");
    await publish(DEFAULT_APP_ID, "ops", { internal: true });
    await publish(DEFAULT_APP_ID, "news", { headline: "first" });
    await sub.waitFor('"headline":"first"', h.clock);
    await publish(shop, "news", { headline: "shop" });
    await shopSub.waitFor('"headline":"shop"', h.clock);
    await publish(DEFAULT_APP_ID, "news", { headline: "second" });
    await sub.waitFor('"headline":"second"', h.clock);

    const text = sub.text();
    expect(text).toMatch(/id: \d+\nevent: message\ndata: \{"headline":"first"\}\n/);
    expect(text).not.toContain("rolled");
    expect(text).not.toContain("internal");
    expect(text).not.toContain('"shop"');
    expect(shopSub.text()).not.toContain("first");
  });

  it("closes the stream when the subscriber token expires", async () => {
    const sub = await connect(
      `/api/v1/realtime/topics/news?token=${await token(DEFAULT_APP_ID, "news", 30)}`,
    );
    expect(sub.status).toBe(200);
    await publish(DEFAULT_APP_ID, "news", { before: "expiry" });
    await sub.waitFor('"before":"expiry"', h.clock);
    await h.clock.advance(31_000);
    await sub.ended();
    await publish(DEFAULT_APP_ID, "news", { after: "expiry" });
    await h.clock.advance(500);
    expect(sub.text()).not.toContain("after");
  });

  it("a large message (beyond a NOTIFY payload) still arrives", async () => {
    const sub = await connect(`/api/v1/realtime/topics/news?token=${await token(DEFAULT_APP_ID, "news")}`);
    const big = "x".repeat(20_000);
    await publish(DEFAULT_APP_ID, "news", { big });
    await sub.waitFor(big, h.clock);
  });
});
