import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blobStore } from "../../src/sdk/blob-store.js";
import { type Harness, startHarness } from "../control/harness.js";
import { drainUntil, kvAll } from "./e2e.js";
import { seedApp, seedScript } from "./seed.js";

describe("admin files API", () => {
  let h: Harness;
  let appId: string;
  const paths: Record<string, string> = {};
  const base = () => `/api/v1/admin/apps/${appId}/files`;

  beforeAll(async () => {
    h = await startHarness();
    appId = await seedApp(h.built, "files-app");
    const { database, paths: p, clock } = h.built.ctx;
    const blobs = blobStore(p.filesRoot);
    for (const [collection, name, text] of [
      ["docs", "a.txt", "alpha"],
      ["docs", "b.txt", "bravo"],
      ["img", "c.png", "charlie"],
    ] as const) {
      const data = Buffer.from(text);
      const path = await blobs.write(appId, data);
      paths[`${collection}/${name}`] = path;
      await database.db
        .insertInto("files")
        .values({
          app_id: appId,
          collection,
          name,
          content_type: "text/plain",
          size: data.length,
          sha256: createHash("sha256").update(data).digest("hex"),
          path,
          created_at: clock.iso(),
          updated_at: clock.iso(),
        })
        .execute();
    }
  });
  afterAll(async () => h.close());

  it("lists metadata with a collection filter and cursor paging", async () => {
    const all = (await h.call("GET", base())).json();
    expect(all.items.map((f: { collection: string; name: string }) => `${f.collection}/${f.name}`)).toEqual([
      "docs/a.txt",
      "docs/b.txt",
      "img/c.png",
    ]);
    expect(all.items[0]).toEqual({
      collection: "docs",
      name: "a.txt",
      content_type: "text/plain",
      size: 5,
      sha256: createHash("sha256").update("alpha").digest("hex"),
      created_at: h.clock.iso(),
      updated_at: h.clock.iso(),
    });
    const page1 = (await h.call("GET", `${base()}?limit=2`)).json();
    expect(page1.items).toHaveLength(2);
    const page2 = (await h.call("GET", `${base()}?limit=2&cursor=${page1.next_cursor}`)).json();
    expect(page2.items.map((f: { name: string }) => f.name)).toEqual(["c.png"]);
    expect(page2.next_cursor).toBeNull();
    const img = (await h.call("GET", `${base()}?collection=img`)).json();
    expect(img.items.map((f: { name: string }) => f.name)).toEqual(["c.png"]);
  });

  it("deletes a file: row and blob gone, files triggers fire, then 404", async () => {
    const script = await seedScript(
      h.built,
      appId,
      "on-file",
      `export default async function (ctx) { await kv.collection("seen").set(ctx.execution_id, ctx.event); return null; }`,
    );
    const trig = await h.call("POST", `/api/v1/admin/apps/${appId}/triggers/files`, {
      script_id: script,
      collection: "docs",
      operations: ["delete"],
    });
    expect(trig.statusCode).toBe(201);
    const blob = join(h.built.ctx.paths.filesRoot, paths["docs/a.txt"] ?? "");
    expect(existsSync(blob)).toBe(true);
    expect((await h.call("GET", `${base()}/docs/a.txt`)).json().size).toBe(5);
    expect((await h.call("DELETE", `${base()}/docs/a.txt`)).statusCode).toBe(204);
    expect(existsSync(blob)).toBe(false);
    expect((await h.call("GET", `${base()}/docs/a.txt`)).statusCode).toBe(404);
    expect((await h.call("DELETE", `${base()}/docs/a.txt`)).statusCode).toBe(404);
    // The files trigger ran with metadata only.
    await drainUntil(h, async () => (await kvAll(h, appId, "seen")).length === 1);
    const [seen] = (await kvAll(h, appId, "seen")) as { files: Record<string, unknown> }[];
    const event = seen?.files ?? {};
    expect(event).toMatchObject({ operation: "delete", collection: "docs", name: "a.txt", size: 5 });
    expect(event.data).toBeUndefined();
  });
});
