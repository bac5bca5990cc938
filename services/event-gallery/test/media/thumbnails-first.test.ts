import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_ATTEMPTS } from "../../src/derivatives/worker.js";
import { type Gallery, solidJpeg, startGallery, upload, uploadRow, worker } from "./helpers.js";

/** Issue 12 item 3: a photo's thumbnail is visible before its larger variants are encoded. */
describe("thumbnails first", () => {
  let g: Gallery;
  let guest: { token: string; id: string };

  beforeAll(async () => {
    g = await startGallery();
    guest = await g.join("Early Bird");
  });
  afterAll(async () => g.close());

  async function uploaded(): Promise<string> {
    const res = await upload(g, guest.token, await solidJpeg(3000, 2000));
    expect(res.statusCode).toBe(201);
    return res.json().upload.id;
  }
  const feedItem = async (id: string) =>
    (await g.call("GET", "/feed", { token: guest.token }))
      .json()
      .items.find((i: { id: string }) => i.id === id);

  it("the tile gets its thumbnail (row, feed URL, media route, event) before preview and display exist", async () => {
    const id = await uploaded();
    const events: string[] = [];
    const unsubscribe = g.built.ctx.bus.subscribe((event, data) => {
      if (data.id === id) events.push(event);
    });
    let between: Record<string, unknown> | null = null;
    const rendered = await worker(g, {
      afterThumbnail: async (uploadId) => {
        if (uploadId !== id) return;
        const item = await feedItem(id);
        const row = await uploadRow(g, id);
        const thumb = await g.call("GET", `/upload/${id}/thumbnail`, { token: guest.token });
        const preview = await g.call("GET", `/upload/${id}/preview`, { token: guest.token });
        between = {
          status: item.compression_status,
          size: [item.width, item.height],
          thumbnail_url: item.thumbnail_url !== null,
          preview_url: item.preview_url,
          display_url: item.display_url,
          thumbnail: [thumb.statusCode, thumb.headers["content-type"]],
          preview: preview.statusCode,
          paths: [row.preview_path, row.display_path],
          events: [...events],
        };
      },
    }).processPending();
    unsubscribe();
    expect(rendered).toBe(1);
    expect(between).toEqual({
      status: "processing",
      size: [3000, 2000],
      thumbnail_url: true,
      preview_url: null,
      display_url: null,
      thumbnail: [200, "image/jpeg"],
      preview: 404,
      paths: [null, null],
      events: ["upload-updated"],
    });
    expect(events).toEqual(["upload-updated", "upload-processed"]);
    const row = await uploadRow(g, id);
    expect(row).toMatchObject({ compression_status: "done", derivative_attempts: 0 });
    expect(row.preview_path).not.toBeNull();
    expect(row.display_path).not.toBeNull();
    const item = await feedItem(id);
    expect(item.preview_url).toMatch(`/api/v1/upload/${id}/preview?t=`);
    expect(item.display_url).toMatch(`/api/v1/upload/${id}/display?t=`);
  });

  it("a failure after the thumbnail counts as the claim's one attempt; the next attempt finishes the row", async () => {
    const id = await uploaded();
    let calls = 0;
    const w = worker(g, {
      afterThumbnail: async () => {
        calls++;
        if (calls === 1) throw new Error("encoder crashed");
      },
    });
    // First attempt: the thumbnail shows, then the larger variants fail; the lane retries the
    // row (attempts are counted write-ahead at each claim) and the second attempt finishes it.
    expect(await w.processPending()).toBe(2);
    expect(calls).toBe(2);
    const row = await uploadRow(g, id);
    expect(row).toMatchObject({
      compression_status: "done",
      derivative_attempts: 0,
      derivative_last_error: null,
    });
  });

  it(`${MAX_ATTEMPTS} failures after the thumbnail still fail and remove the upload as before`, async () => {
    const id = await uploaded();
    const w = worker(g, {
      afterThumbnail: async () => {
        throw new Error("encoder crashed");
      },
    });
    await w.processPending();
    const row = await uploadRow(g, id);
    expect(row).toMatchObject({ compression_status: "failed", derivative_attempts: MAX_ATTEMPTS });
    expect(row.deleted_at).not.toBeNull();
    expect(await feedItem(id)).toBeUndefined();
  });
});
