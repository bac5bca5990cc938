import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gallery, noiseJpeg, startGallery, testMp4, upload, worker } from "./helpers.js";

describe("media routes", () => {
  let g: Gallery;
  let owner: { token: string; id: string };
  let viewer: { token: string; id: string };
  let jpeg: Buffer;
  let item: Record<string, string>;

  beforeAll(async () => {
    g = await startGallery();
    // Routes a static web app or fallback might answer: the /media/ guard must win over them.
    for (const p of ["/media/*", "/api/v1/media/*", "/mediax/*"]) g.built.app.get(p, async () => "leak");
    owner = await g.join("Owner");
    viewer = await g.join("Viewer");
    jpeg = await noiseJpeg(64, 64);
    item = (await upload(g, owner.token, jpeg)).json().upload;
  });
  afterAll(async () => g.close());

  const get = (url: string, headers: Record<string, string> = {}, token: string | null = viewer.token) =>
    g.built.app.inject({
      method: "GET",
      url,
      headers: { ...headers, ...(token ? { authorization: `Bearer ${token}` } : {}) },
    });
  const original = () => `/api/v1/upload/${item.id}/original`;

  it("serves the original inline, uncached, with its sniffed type, to any signed-in user", async () => {
    const res = await get(original());
    expect(res.statusCode).toBe(200);
    expect(res.headers).toMatchObject({
      "content-type": "image/jpeg",
      "content-disposition": "inline",
      "cache-control": "no-store",
      "accept-ranges": "bytes",
      "content-length": String(jpeg.length),
    });
    expect(res.rawPayload.equals(jpeg)).toBe(true);
  });

  it("accepts the media token from the feed URL instead of the header, and nothing else", async () => {
    expect((await get(original(), {}, null)).statusCode).toBe(401);
    expect((await get(`${original()}?t=not-a-token`, {}, null)).statusCode).toBe(401);
    const url = item.original_url ?? "";
    expect(url).toContain("?t=");
    expect((await get(url, {}, null)).statusCode).toBe(200);
    // A session token is not a media token.
    expect((await get(`${original()}?t=${viewer.token}`, {}, null)).statusCode).toBe(401);
  });

  it("implements the Range table", async () => {
    const len = jpeg.length;
    const cases: [string | undefined, number, string | undefined, Buffer | null][] = [
      [undefined, 200, undefined, jpeg],
      ["bytes=10-", 206, `bytes 10-${len - 1}/${len}`, jpeg.subarray(10)],
      ["bytes=10-19", 206, `bytes 10-19/${len}`, jpeg.subarray(10, 20)],
      [`bytes=5-${len + 100}`, 206, `bytes 5-${len - 1}/${len}`, jpeg.subarray(5)],
      ["bytes=-7", 206, `bytes ${len - 7}-${len - 1}/${len}`, jpeg.subarray(len - 7)],
      [`bytes=-${len + 50}`, 206, `bytes 0-${len - 1}/${len}`, jpeg],
      [`bytes=${len}-`, 416, `bytes */${len}`, null],
      [`bytes=${len + 10}-${len + 20}`, 416, `bytes */${len}`, null],
      ["bytes=0-1,4-5", 200, undefined, jpeg],
      ["items=0-5", 200, undefined, jpeg],
      ["bytes=abc", 200, undefined, jpeg],
      ["bytes=9-3", 200, undefined, jpeg],
      ["bytes=-", 200, undefined, jpeg],
    ];
    for (const [range, status, contentRange, body] of cases) {
      const res = await get(original(), range ? { range } : {});
      expect(res.statusCode, String(range)).toBe(status);
      expect(res.headers["accept-ranges"], String(range)).toBe("bytes");
      expect(res.headers["content-range"], String(range)).toBe(contentRange);
      if (body) expect(res.rawPayload.equals(body), String(range)).toBe(true);
      if (status === 416) expect(res.json().error.code).toBe("range_not_satisfiable");
    }
  });

  it("a derivative is 404 not_found until it exists, then served with Range", async () => {
    for (const v of ["preview", "display", "thumbnail"]) {
      const res = await get(`/api/v1/upload/${item.id}/${v}`);
      expect(res.statusCode).toBe(404);
      expect(res.json().error.code).toBe("not_found");
    }
    await worker(g).processPending();
    for (const v of ["preview", "display", "thumbnail"]) {
      const res = await get(`/api/v1/upload/${item.id}/${v}`);
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-type"]).toBe("image/jpeg");
      const part = await get(`/api/v1/upload/${item.id}/${v}`, { range: "bytes=0-1" });
      expect(part.statusCode).toBe(206);
      expect([...part.rawPayload]).toEqual([0xff, 0xd8]);
    }
  });

  it("a video has only its original and a thumbnail", async () => {
    const video = (await upload(g, owner.token, await testMp4())).json().upload;
    await worker(g).processPending();
    const base = `/api/v1/upload/${video.id}`;
    const orig = await get(`${base}/original`, { range: "bytes=0-99" });
    expect(orig.statusCode).toBe(206);
    expect(orig.headers["content-type"]).toBe("video/mp4");
    expect((await get(`${base}/thumbnail`)).statusCode).toBe(200);
    expect((await get(`${base}/preview`)).statusCode).toBe(404);
    expect((await get(`${base}/display`)).statusCode).toBe(404);
  });

  it("does not serve deleted uploads or uploads of banned or hidden users", async () => {
    const { db } = g.built.ctx.database;
    const a = (await upload(g, owner.token, jpeg)).json().upload;
    expect((await get(`/api/v1/upload/${a.id}/original`)).statusCode).toBe(200);
    await db.updateTable("users").set({ is_banned: 1 }).where("id", "=", owner.id).execute();
    expect((await get(`/api/v1/upload/${a.id}/original`)).statusCode).toBe(404);
    await db
      .updateTable("users")
      .set({ is_banned: 0, uploads_hidden_at: g.clock.iso() })
      .where("id", "=", owner.id)
      .execute();
    expect((await get(`/api/v1/upload/${a.id}/original`)).statusCode).toBe(404);
    await db.updateTable("users").set({ uploads_hidden_at: null }).where("id", "=", owner.id).execute();
    expect((await get(`/api/v1/upload/${a.id}/original`)).statusCode).toBe(200);
    expect((await g.call("DELETE", `/upload/${a.id}`, { token: owner.token })).statusCode).toBe(204);
    const gone = await get(`/api/v1/upload/${a.id}/original`);
    expect(gone.statusCode).toBe(404);
    expect(gone.json().error.code).toBe("not_found");
    expect((await get("/api/v1/upload/01a1fe8f-0000-7000-8000-000000000000/original")).statusCode).toBe(404);
  });

  it("answers 404 for any path under /media/, however it is encoded", async () => {
    expect((await get("/mediax/a.jpg")).statusCode).toBe(200);
    const paths = [
      "/media/a.jpg",
      "/media",
      "/media/",
      "/api/v1/media/a.jpg",
      "/%6Dedia/a.jpg",
      "/%6dedia/a.jpg",
      "/%6D%65%64%69%61/a.jpg",
      "/media%2Fa.jpg",
      "/media%2fa.jpg",
      "/%256Dedia/a.jpg",
      "/%25256Dedia/a.jpg",
      "/api/v1/%6Dedia/a.jpg",
      "/api%2Fv1%2Fmedia%2Fa.jpg",
      "//media/a.jpg",
      "/x/../media/a.jpg",
      "/x/%2E%2E/media/a.jpg",
      "/media/a.jpg?x=1",
      "/media/%E0%A4%A",
      "/%6Dedia/bad%zz",
    ];
    for (const p of paths) {
      const res = await get(p);
      expect(res.statusCode, p).toBe(404);
      expect(res.json().error.code, p).toBe("not_found");
    }
  });
});
