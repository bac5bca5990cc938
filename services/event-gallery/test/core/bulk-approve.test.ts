import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setSettings, solidJpeg, upload } from "../media/helpers.js";
import { type Gallery, recordEvents, startGallery } from "./harness.js";

/** POST /host/pending:approve (contract "Live event"): a listed batch or the whole queue at once. */
describe("bulk approval of the pending queue", () => {
  let g: Gallery;
  beforeAll(async () => {
    g = await startGallery();
    await setSettings(g, { premoderation: true });
  });
  afterAll(async () => g?.close());

  const pendingUpload = async (token: string) => {
    const res = await upload(g, token, await solidJpeg());
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().upload.approval).toBe("pending");
    return res.json().upload.id as string;
  };
  const feedIds = async (token: string) =>
    ((await g.call("GET", "/feed", { token })).json().items as { id: string }[]).map((i) => i.id);

  it("approves the listed ids, skips the rest, then everything left; guests may not", async () => {
    const host = await g.host("Bulk Host");
    const ann = await g.join("Bulk Ann");
    const viewer = await g.join("Bulk Viewer");
    const [a, b, c] = [
      await pendingUpload(ann.token),
      await pendingUpload(ann.token),
      await pendingUpload(ann.token),
    ];
    const approve = (body: unknown, token = host.token) =>
      g.call("POST", "/host/pending:approve", { token, body });

    expect((await approve({ ids: [a] }, ann.token)).statusCode).toBe(403);
    const ev = recordEvents(g);
    const first = await approve({ ids: [a, b, "01900000-0000-7000-8000-000000000000"] });
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toEqual({ approved: 2 });
    expect(ev.seen.filter((e) => e.event === "new-upload").map((e) => e.data.id)).toEqual([a, b]);
    ev.stop();
    expect(new Set(await feedIds(viewer.token))).toEqual(new Set([a, b]));
    // Again: already approved, nothing to do.
    expect((await approve({ ids: [a, b] })).json()).toEqual({ approved: 0 });
    const queue = (await g.call("GET", "/host/pending", { token: host.token })).json();
    expect(queue.items.map((i: { id: string }) => i.id)).toEqual([c]);
    // What the queue needs to decide without opening anything.
    expect(queue.items[0]).toMatchObject({
      caption: "",
      hashtags: [],
      uploader: { id: ann.id, display_name: "Bulk Ann" },
      approval: "pending",
    });
    expect(Object.keys(queue.items[0])).toEqual(expect.arrayContaining(["preview_url", "original_url"]));
    expect((await approve({ all: true })).json()).toEqual({ approved: 1 });
    expect((await g.call("GET", "/host/pending", { token: host.token })).json().items).toEqual([]);
    const audit = (await g.call("GET", "/host/audit", { token: host.token })).json().entries;
    expect(audit.filter((e: { action: string }) => e.action === "approve_upload")).toHaveLength(3);
  });

  it.each([
    ["an empty list", { ids: [] }],
    ["201 ids", { ids: Array.from({ length: 201 }, () => "01900000-0000-7000-8000-000000000000") }],
    ["all: false", { all: false }],
    ["not a uuid", { ids: ["x"] }],
    ["an unknown field", { ids: ["01900000-0000-7000-8000-000000000000"], also: 1 }],
    ["nothing", {}],
  ])("refuses %s with 422", async (_name, body) => {
    const host = await g.host(`Bulk Host ${Object.keys(body).join("")}${JSON.stringify(body).length}`);
    const res = await g.call("POST", "/host/pending:approve", { token: host.token, body });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().error.code).toBe("validation_failed");
  });
});
