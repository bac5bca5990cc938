import { readdir } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gallery, noiseJpeg, startGallery } from "../media/helpers.js";
import { listen, partialFiles, type Tus } from "./tus.js";

/** Open a raw request, send `sent` bytes of its body, then fall silent; resolves when the server hangs up. */
function silentRequest(base: string, head: string, body: Buffer, sent: number): Promise<number> {
  const url = new URL(base);
  return new Promise((resolve) => {
    const started = Date.now();
    const sock = connect(Number(url.port), url.hostname);
    sock.on("error", () => {});
    sock.on("close", () => resolve(Date.now() - started));
    sock.write(`${head}Content-Length: ${body.length}\r\n\r\n`);
    sock.write(body.subarray(0, sent));
  });
}

describe("GALLERY_UPLOAD_IDLE_S", () => {
  let g: Gallery;
  let tus: Tus;
  let photo: Buffer;
  let token: string;
  beforeAll(async () => {
    g = await startGallery({ env: { GALLERY_UPLOAD_IDLE_S: "1" } });
    tus = await listen(g);
    photo = await noiseJpeg(600, 400);
    ({ token } = await g.join("Quiet"));
  });
  afterAll(async () => g.close());

  it("ends a POST /upload that stops sending and removes its temp file", async () => {
    const part = Buffer.concat([
      Buffer.from('--XX\r\nContent-Disposition: form-data; name="file"; filename="a.jpg"\r\n\r\n'),
      photo,
      Buffer.from("\r\n--XX--\r\n"),
    ]);
    const ms = await silentRequest(
      tus.base,
      `POST /api/v1/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: multipart/form-data; boundary=XX\r\n`,
      part,
      part.length / 2,
    );
    expect(ms).toBeGreaterThanOrEqual(900);
    expect(ms).toBeLessThan(10_000);
    const originals = join(g.built.ctx.paths.mediaDir, "originals");
    await expect.poll(() => readdir(originals)).toEqual([]);
  });

  it("ends a silent tus PATCH but keeps the bytes it received for the resume", async () => {
    const created = await tus.create(token, photo.length, { client_upload_id: "idle-1" });
    const loc = created.headers.get("location") as string;
    await silentRequest(
      tus.base,
      `PATCH ${loc} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\nContent-Type: application/offset+octet-stream\r\n`,
      photo,
      30_000,
    );
    expect((await tus.head(token, loc)).headers.get("upload-offset")).toBe("30000");
    expect(await partialFiles(g)).toHaveLength(1);
    expect((await tus.patch(token, loc, 30_000, photo.subarray(30_000))).status).toBe(201);
  });
});
