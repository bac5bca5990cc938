import { createHash } from "node:crypto";
import { readdir, stat } from "node:fs/promises";
import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { expect } from "vitest";
import type { Gallery } from "../core/harness.js";

/** A minimal tus client over real sockets, so a body can be cut off mid-way. */
export interface Tus {
  base: string;
  create(token: string, length: number, meta: Record<string, string>): Promise<Response>;
  head(token: string, location: string): Promise<Response>;
  patch(token: string, location: string, offset: number, body: Uint8Array): Promise<Response>;
  /**
   * Send `sent` bytes of a PATCH announcing `announced`, wait until `delivered()` says the server
   * holds them, then cut the connection.
   */
  cutPatch(
    token: string,
    location: string,
    offset: number,
    announced: Buffer,
    sent: number,
    delivered: () => Promise<boolean>,
  ): Promise<void>;
}

export async function listen(g: Gallery): Promise<Tus> {
  await g.built.app.listen({ port: 0, host: "127.0.0.1" });
  const { port } = g.built.app.server.address() as AddressInfo;
  return tusClient(`http://127.0.0.1:${port}`);
}

export function tusClient(base: string): Tus {
  const h = (token: string, extra: Record<string, string> = {}) => ({
    authorization: `Bearer ${token}`,
    "tus-resumable": "1.0.0",
    ...extra,
  });
  return {
    base,
    create: (token, length, meta) =>
      fetch(`${base}/api/v1/uploads`, {
        method: "POST",
        headers: h(token, {
          "upload-length": String(length),
          "upload-metadata": encodeMetadata(meta),
        }),
      }),
    head: (token, location) => fetch(`${base}${location}`, { method: "HEAD", headers: h(token) }),
    patch: (token, location, offset, body) =>
      fetch(`${base}${location}`, {
        method: "PATCH",
        headers: h(token, {
          "upload-offset": String(offset),
          "content-type": "application/offset+octet-stream",
        }),
        body,
      }),
    cutPatch: (token, location, offset, announced, sent, delivered) =>
      new Promise((resolve, reject) => {
        const req = request(`${base}${location}`, {
          method: "PATCH",
          headers: h(token, {
            "upload-offset": String(offset),
            "content-type": "application/offset+octet-stream",
            "content-length": String(announced.length),
          }),
        });
        req.on("error", () => resolve());
        req.on("close", () => resolve());
        req.write(announced.subarray(0, sent), () => {
          // Drop the connection as a phone would, once the server stored what was sent: a cut
          // before its handler reads the body would deliver nothing.
          expect
            .poll(delivered)
            .toBe(true)
            .then(
              () => req.destroy(),
              (err: unknown) => {
                req.destroy();
                reject(err);
              },
            );
        });
      }),
  };
}

/**
 * The offset the server answers once it has taken in what a cut PATCH delivered: HEAD until it
 * passes `above` (the handler of the cut request may still be finishing when the HEAD arrives).
 */
export async function offsetAfterCut(
  tus: Tus,
  token: string,
  location: string,
  above: number,
): Promise<number> {
  const offset = async () => Number((await tus.head(token, location)).headers.get("upload-offset"));
  await expect.poll(offset).toBeGreaterThan(above);
  return offset();
}

/** Bytes stored so far for a tus upload (its partial file's size; 0 before the file exists). */
export async function storedBytes(g: Gallery, location: string): Promise<number> {
  const key = location.split("/").pop() as string;
  return stat(join(g.dataDir, "partials", key)).then(
    (s) => s.size,
    () => 0,
  );
}

export const encodeMetadata = (meta: Record<string, string>) =>
  Object.entries(meta)
    .map(([k, v]) => `${k} ${Buffer.from(v).toString("base64")}`)
    .join(",");

export const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

/** Files in DATA_DIR/partials (unfinished tus uploads). */
export async function partialFiles(g: Gallery): Promise<string[]> {
  return readdir(join(g.dataDir, "partials")).catch(() => []);
}

/** Set or clear the upload lock directly (the host routes are tested elsewhere). */
export async function setLocked(g: Gallery, locked: boolean): Promise<void> {
  await g.built.ctx.database.db
    .updateTable("event")
    .set({ uploads_locked_at: locked ? g.clock.iso() : null })
    .where("id", "=", 1)
    .execute();
}

/** A JSON answer of the upload routes: `{upload}` on success, `{error}` otherwise. */
export const body = (r: Response) =>
  r.json() as Promise<{
    upload: Record<string, unknown> & { id: string };
    error: { code: string; message: string };
  }>;
