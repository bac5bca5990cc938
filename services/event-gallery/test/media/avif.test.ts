import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { body, listen, type Tus } from "../uploads/tus.js";
import { makeHeic } from "./heic.js";
import { type Gallery, startGallery, upload, uploadRow, worker } from "./helpers.js";

/** AVIF (Android phones) and HEIC (iPhones) through both upload paths into all derivatives. */
describe("AVIF and HEIC uploads", () => {
  let g: Gallery;
  let tus: Tus;
  let token: string;
  beforeAll(async () => {
    g = await startGallery();
    tus = await listen(g);
    ({ token } = await g.join("Droid"));
  });
  afterAll(async () => g.close());

  // 10-bit like many phone AVIFs; 900×600 so display and preview differ from the thumbnail.
  const avif = () =>
    sharp({ create: { width: 900, height: 600, channels: 3, background: { r: 10, g: 120, b: 200 } } })
      .avif({ quality: 60, bitdepth: 10 })
      .toBuffer();

  async function expectAllDerivatives(id: string, width: number, height: number) {
    // The server listens (tus), so its own worker may hold the row's lease already: then wait for
    // that render instead of rendering it a second time.
    let stop = () => {};
    const processed = new Promise<void>((resolve) => {
      stop = g.built.ctx.bus.subscribe((e, d) => {
        if (e === "upload-processed" && d.id === id) resolve();
      });
    });
    await worker(g).processPending();
    if ((await uploadRow(g, id)).compression_status === "processing") await processed;
    stop();
    const row = await uploadRow(g, id);
    expect(row.compression_status).toBe("done");
    expect([row.width, row.height]).toEqual([width, height]);
    for (const variant of ["display", "preview", "thumbnail"]) {
      const res = await g.call("GET", `/upload/${id}/${variant}`, { token });
      expect(res.statusCode, variant).toBe(200);
      const meta = await sharp(res.rawPayload).metadata();
      expect(meta.format).toBe("jpeg");
    }
  }

  it("accepts AVIF on POST /upload (sniffed, not 415) and renders every derivative", async () => {
    const res = await upload(g, token, await avif(), [], "application/octet-stream");
    expect(res.statusCode).toBe(201);
    expect(res.json().upload.mime_type).toBe("image/avif");
    await expectAllDerivatives(res.json().upload.id, 900, 600);
  });

  it("accepts AVIF and HEIC through tus into the same derivative path", async () => {
    for (const [key, bytes, mime, w, h] of [
      ["avif-tus", await avif(), "image/avif", 900, 600],
      ["heic-tus", await makeHeic(64, 48), "image/heic", 64, 48],
    ] as const) {
      const created = await tus.create(token, bytes.length, { client_upload_id: key });
      const loc = created.headers.get("location") as string;
      const done = await tus.patch(token, loc, 0, bytes);
      expect(done.status).toBe(201);
      const up = (await body(done)).upload;
      expect(up.mime_type).toBe(mime);
      await expectAllDerivatives(up.id, w, h);
    }
  });
});
