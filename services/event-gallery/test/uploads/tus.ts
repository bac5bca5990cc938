import { createHash } from "node:crypto";
import { readdir } from "node:fs/promises";
import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import type { Gallery } from "../core/harness.js";

/** A minimal tus client over real sockets, so a body can be cut off mid-way. */
export interface Tus {
  base: string;
  create(token: string, length: number, meta: Record<string, string>): Promise<Response>;
  head(token: string, location: string): Promise<Response>;
  patch(token: string, location: string, offset: number, body: Uint8Array): Promise<Response>;
  /** Send `sent` bytes of a PATCH announcing `announced`, then cut the connection. */
  cutPatch(token: string, location: string, offset: number, announced: Buffer, sent: number): Promise<void>;
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
    cutPatch: (token, location, offset, announced, sent) =>
      new Promise((resolve) => {
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
          // Give the bytes a moment on the wire, then drop the connection as a phone would.
          setTimeout(() => req.destroy(), 50);
        });
      }),
  };
}

/**
 * The offset once the server has taken in what a cut PATCH delivered. A cut client cannot know
 * when the server's handler has run (the HEAD may even reach the server before the cut request
 * does), so this awaits the condition: HEAD until the offset passes `above` (5 s at most).
 */
export async function offsetAfterCut(
  tus: Tus,
  token: string,
  location: string,
  above: number,
): Promise<number> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const offset = Number((await tus.head(token, location)).headers.get("upload-offset"));
    if (offset > above || Date.now() > deadline) return offset;
    await delay(20);
  }
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
