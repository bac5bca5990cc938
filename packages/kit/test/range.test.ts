import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createHttpApp } from "../src/http/app.js";
import { parseRange, sendFileWithRange } from "../src/http/range.js";
import { captureLogger } from "../src/logger.js";

describe("parseRange", () => {
  const size = 1000;
  it.each([
    [undefined, { type: "full" }],
    ["bytes=0-", { type: "partial", start: 0, end: 999 }],
    ["bytes=100-", { type: "partial", start: 100, end: 999 }],
    ["bytes=100-199", { type: "partial", start: 100, end: 199 }],
    ["bytes=900-5000", { type: "partial", start: 900, end: 999 }],
    ["bytes=0-99999999999999999999", { type: "partial", start: 0, end: 999 }],
    ["bytes=999-999", { type: "partial", start: 999, end: 999 }],
    ["bytes=-100", { type: "partial", start: 900, end: 999 }],
    ["bytes=-5000", { type: "partial", start: 0, end: 999 }],
    ["bytes=1000-", { type: "unsatisfiable" }],
    ["bytes=1000-1200", { type: "unsatisfiable" }],
    ["bytes=-0", { type: "unsatisfiable" }],
    ["bytes=0-10,20-30", { type: "full" }],
    ["items=0-10", { type: "full" }],
    ["bytes=abc", { type: "full" }],
    ["bytes=10-5", { type: "full" }],
    ["bytes=-", { type: "full" }],
    ["bytes 0-10", { type: "full" }],
    ["bytes=0-10x", { type: "full" }],
    ["", { type: "full" }],
    ["bytes=99999999999999999999-", { type: "full" }],
  ])("%s → %o", (header, expected) => {
    expect(parseRange(header, size)).toEqual(expected);
  });

  it("treats any range on an empty file as unsatisfiable", () => {
    expect(parseRange("bytes=0-", 0)).toEqual({ type: "unsatisfiable" });
    expect(parseRange("bytes=-1", 0)).toEqual({ type: "unsatisfiable" });
  });
});

describe("sendFileWithRange", () => {
  const dir = mkdtempSync(join(tmpdir(), "range-"));
  const file = join(dir, "data.bin");
  const bytes = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));
  writeFileSync(file, bytes);
  const app = createHttpApp({ logger: captureLogger().logger });
  app.get("/f", (req, reply) =>
    sendFileWithRange(reply, {
      path: file,
      contentType: "application/octet-stream",
      rangeHeader: req.headers.range,
    }),
  );
  afterAll(() => app.close());

  it("sends 206 with Content-Range and exactly the bytes asked for", async () => {
    const res = await app.inject({ url: "/f", headers: { range: "bytes=10-19" } });
    expect(res.statusCode).toBe(206);
    expect(res.headers["content-range"]).toBe("bytes 10-19/1000");
    expect(res.headers["accept-ranges"]).toBe("bytes");
    expect(res.rawPayload.equals(bytes.subarray(10, 20))).toBe(true);
  });

  it("sends the suffix for bytes=-S", async () => {
    const res = await app.inject({ url: "/f", headers: { range: "bytes=-5" } });
    expect(res.statusCode).toBe(206);
    expect(res.rawPayload.equals(bytes.subarray(995))).toBe(true);
  });

  it("answers 416 with bytes */len past the end, in the error shape", async () => {
    const res = await app.inject({ url: "/f", headers: { range: "bytes=1000-" } });
    expect(res.statusCode).toBe(416);
    expect(res.headers["content-range"]).toBe("bytes */1000");
    expect(res.headers["accept-ranges"]).toBe("bytes");
    expect(res.json().error.code).toBe("range_not_satisfiable");
  });

  it("sends the full body for multi-range, other units and malformed headers", async () => {
    for (const range of ["bytes=0-1,5-6", "pages=1-2", "bytes=x-y", undefined]) {
      const res = await app.inject({ url: "/f", headers: range ? { range } : {} });
      expect(res.statusCode).toBe(200);
      expect(res.headers["accept-ranges"]).toBe("bytes");
      expect(res.rawPayload.equals(bytes)).toBe(true);
    }
  });
});
