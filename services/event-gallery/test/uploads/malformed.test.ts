import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gallery, mediaFiles, solidJpeg, startGallery, userBytes } from "../media/helpers.js";
import { listen, type Tus } from "./tus.js";

/** Bad bodies get the common error shape and never a 500; nothing is left on disk. */
describe("malformed upload bodies", () => {
  let g: Gallery;
  let tus: Tus;
  let jpeg: Buffer;
  let token: string;
  let userId: string;
  beforeAll(async () => {
    g = await startGallery();
    tus = await listen(g);
    jpeg = await solidJpeg();
    ({ token, id: userId } = await g.join("Mallory"));
  });
  afterAll(async () => g.close());

  const part = (name: string, value: string | Buffer, filename?: string) =>
    Buffer.concat([
      Buffer.from(
        `--XX\r\nContent-Disposition: form-data; name="${name}"${filename ? `; filename="${filename}"` : ""}\r\n\r\n`,
      ),
      Buffer.from(value),
      Buffer.from("\r\n"),
    ]);
  const end = Buffer.from("--XX--\r\n");
  const post = (contentType: string, payload: Buffer | string) =>
    g.built.app.inject({
      method: "POST",
      url: "/api/v1/upload",
      headers: { authorization: `Bearer ${token}`, "content-type": contentType },
      payload,
    });

  it.each([
    ["no boundary", "multipart/form-data", () => Buffer.concat([part("file", jpeg, "a.jpg"), end]), 400],
    [
      "an empty boundary",
      "multipart/form-data; boundary=",
      () => Buffer.concat([part("file", jpeg, "a.jpg"), end]),
      400,
    ],
    ["no closing boundary", "multipart/form-data; boundary=XX", () => part("file", jpeg, "a.jpg"), 400],
    [
      "a truncated part header",
      "multipart/form-data; boundary=XX",
      () => Buffer.from("--XX\r\nContent-Disposition: form-da"),
      400,
    ],
    [
      "two file parts",
      "multipart/form-data; boundary=XX",
      () => Buffer.concat([part("file", jpeg, "a.jpg"), part("file", jpeg, "b.jpg"), end]),
      422,
    ],
    [
      "a field after the file",
      "multipart/form-data; boundary=XX",
      () => Buffer.concat([part("file", jpeg, "a.jpg"), part("caption", "late"), end]),
      422,
    ],
  ])("%s → invalid_multipart", async (_name, contentType, payload, status) => {
    const res = await post(contentType, payload());
    expect(res.statusCode).toBe(status);
    expect(res.json().error.code).toBe("invalid_multipart");
    expect(await mediaFiles(g)).toEqual([]);
    expect(await userBytes(g, userId)).toBe(0);
  });

  it("names the rule that was broken", async () => {
    const two = await post(
      "multipart/form-data; boundary=XX",
      Buffer.concat([part("file", jpeg, "a.jpg"), part("file", jpeg, "b.jpg"), end]),
    );
    expect(two.json().error.message).toMatch(/one file part/);
    const late = await post(
      "multipart/form-data; boundary=XX",
      Buffer.concat([part("file", jpeg, "a.jpg"), part("caption", "late"), end]),
    );
    expect(late.json().error.message).toMatch(/before the file; "caption"/);
    // The well-formed form still works.
    const ok = await post(
      "multipart/form-data; boundary=XX",
      Buffer.concat([part("caption", "fine"), part("file", jpeg, "a.jpg"), end]),
    );
    expect(ok.statusCode).toBe(201);
  });

  /** A well-formed body for `boundary`, so only the boundary itself can be wrong. */
  const formWith = (boundary: string, key: string) =>
    Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="client_upload_id"\r\n\r\n${key}\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.jpg"\r\n\r\n`,
      ),
      jpeg,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);

  it.each([
    ["empty", "multipart/form-data; boundary=", ""],
    ["empty and quoted", 'multipart/form-data; boundary=""', ""],
    ["71 characters", `multipart/form-data; boundary=${"b".repeat(71)}`, "b".repeat(71)],
    ["200 characters", `multipart/form-data; boundary=${"b".repeat(200)}`, "b".repeat(200)],
    ["ending in a space", 'multipart/form-data; boundary="abc "', "abc "],
  ])(
    "refuses a boundary that is %s with 400 invalid_multipart, though the body matches it",
    async (_n, type, b) => {
      const res = await post(type, formWith(b, `boundary-${b.length}-${type.length}`));
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().error.code).toBe("invalid_multipart");
      expect((await mediaFiles(g)).filter((f) => f.includes(".tmp-"))).toEqual([]);
    },
  );

  it("accepts a 70-character boundary, quoted or not, and checks the cover route too", async () => {
    const b = `${"a".repeat(60)}0123456789`;
    expect((await post(`multipart/form-data; boundary=${b}`, formWith(b, "b70-1"))).statusCode).toBe(201);
    expect((await post(`multipart/form-data; boundary="${b}"`, formWith(b, "b70-2"))).statusCode).toBe(201);
    const admin = await g.adminToken();
    const cover = await g.built.app.inject({
      method: "PUT",
      url: "/api/v1/admin/cover",
      headers: { authorization: `Bearer ${admin}`, "content-type": `multipart/form-data; boundary=${b}x` },
      payload: formWith(`${b}x`, "cover"),
    });
    expect(cover.statusCode).toBe(400);
    expect(cover.json().error.code).toBe("invalid_multipart");
  });

  it("answers a badly chunked body 400 in the common shape", async () => {
    const port = new URL(tus.base).port;
    const raw = await new Promise<string>((resolve) => {
      const sock = connect(Number(port), "127.0.0.1");
      let out = "";
      sock.on("data", (d) => {
        out += d.toString();
      });
      sock.on("close", () => resolve(out));
      sock.on("error", () => resolve(out));
      sock.write(
        "POST /api/v1/upload HTTP/1.1\r\nHost: x\r\n" +
          `Authorization: Bearer ${token}\r\nContent-Type: multipart/form-data; boundary=XX\r\n` +
          "Transfer-Encoding: chunked\r\n\r\n10\r\n--XX\r\nContent-Di\r\nZZZ\r\n",
      );
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400/);
    expect(raw).toMatch(/"code":"(invalid_body|invalid_multipart)"/);
    expect((await mediaFiles(g)).filter((f) => f.includes(".tmp-"))).toEqual([]);
  });

  it.each([
    ["null", "null"],
    ["an array", "[1]"],
    ["a string", '"caption"'],
    ["a number", "7"],
  ])("PATCH /upload/{id} with %s as the body → 422", async (_name, payload) => {
    const ok = await post(
      "multipart/form-data; boundary=XX",
      Buffer.concat([part("client_upload_id", `patch-${payload}`), part("file", jpeg, "a.jpg"), end]),
    );
    const id = ok.json().upload.id;
    const res = await g.built.app.inject({
      method: "PATCH",
      url: `/api/v1/upload/${id}`,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      payload,
    });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe("validation_failed");
  });

  it("never logs a 500 for any of these", () => {
    expect(g.logs.text()).not.toMatch(/"level":50/);
  });
});
