import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "./harness.js";

describe("secrets admin API", () => {
  let h: Harness;
  let appId: string;
  let otherId: string;
  const PLAIN = "sk_live_do-not-leak-0123456789";

  beforeAll(async () => {
    h = await startHarness({ PLATFORM_SECRET_MAX_VALUE_BYTES: "64" });
    appId = (await h.call("POST", "/api/v1/admin/apps", { slug: "vault" })).json().id;
    otherId = (await h.call("POST", "/api/v1/admin/apps", { slug: "other" })).json().id;
  });
  afterAll(() => h.close());

  it("sets a secret that scripts of that app read back with its type; lists names only", async () => {
    const set = await h.call("POST", `/api/v1/admin/apps/${appId}/secrets`, {
      name: "stripe",
      value: { key: PLAIN, n: 3 },
    });
    expect(set.statusCode).toBe(201);
    expect(set.json()).toEqual({ name: "stripe", updated_at: "2026-11-21T12:00:00.000Z" });

    const list = await h.call("GET", `/api/v1/admin/apps/vault/secrets`);
    expect(list.statusCode).toBe(200);
    expect(list.json()).toEqual({
      items: [{ name: "stripe", updated_at: "2026-11-21T12:00:00.000Z" }],
      next_cursor: null,
    });
    expect(list.body).not.toContain(PLAIN);

    // Stored sealed: the raw column never holds the plaintext.
    const raw = await h.built.ctx.database.db
      .selectFrom("secrets")
      .select("value_enc")
      .executeTakeFirstOrThrow();
    expect(String(raw.value_enc)).not.toContain(PLAIN);

    const make = async (app: string, name: string) =>
      (
        await h.call("POST", "/api/v1/admin/scripts", {
          app_id: app,
          name,
          kind: "endpoint",
          source: `export default async () => ({ v: await secrets.get("stripe") })`,
        })
      ).json().id;
    const mine = await h.call("GET", `/api/v1/execute/${await make(appId, "read")}`, undefined, null);
    expect(mine.json()).toEqual({ v: { key: PLAIN, n: 3 } });
    // Another app's script cannot see it.
    const theirs = await h.call("GET", `/api/v1/execute/${await make(otherId, "peek")}`, undefined, null);
    expect(theirs.json()).toEqual({ v: null });
  });

  it("overwrites on a second set, and deletes (then 404)", async () => {
    await h.clock.advance(1000);
    const again = await h.call("POST", `/api/v1/admin/apps/${appId}/secrets`, {
      name: "stripe",
      value: "v2",
    });
    expect(again.json().updated_at).toBe("2026-11-21T12:00:01.000Z");
    expect((await h.call("GET", `/api/v1/admin/apps/${appId}/secrets`)).json().items).toHaveLength(1);
    expect((await h.call("DELETE", `/api/v1/admin/apps/${appId}/secrets/stripe`)).statusCode).toBe(204);
    const gone = await h.call("DELETE", `/api/v1/admin/apps/${appId}/secrets/stripe`);
    expect(gone.statusCode).toBe(404);
    expect(gone.json().error.code).toBe("secret_not_found");
  });

  it("refuses bad input clearly and never echoes the value", async () => {
    const url = `/api/v1/admin/apps/${appId}/secrets`;
    const big = await h.call("POST", url, { name: "big", value: "x".repeat(100) });
    expect(big.statusCode).toBe(413);
    expect(big.json().error).toMatchObject({ code: "payload_too_large", field: "value", limit: 64 });
    expect(big.body).not.toContain("xxxxxxxx");
    const unknown = await h.call("POST", url, { name: "a", value: 1, extra: true });
    expect(unknown.json().error).toMatchObject({ code: "validation_failed", field: "extra" });
    const badName = await h.call("POST", url, { name: "no spaces", value: 1 });
    expect(badName.json().error).toMatchObject({ code: "validation_failed", field: "name" });
    const noValue = await h.call("POST", url, { name: "a" });
    expect(noValue.json().error).toMatchObject({ code: "validation_failed", field: "value" });
    expect((await h.call("GET", url, undefined, null)).statusCode).toBe(401);
  });
});
