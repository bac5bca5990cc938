import { AppError } from "@app/kit/errors";
import type { FastifyInstance } from "fastify";

/**
 * RFC 2046 (5.1.1): a boundary is 1 to 70 characters from a small set, not ending in a space.
 * The multipart parser takes anything, an empty boundary too; every multipart route of the
 * service is checked here, before its body is read.
 */
const BCHARS = /^[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]$/;
const PARAM = /;\s*boundary\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]*))/i;

/** The boundary of a multipart Content-Type, or null when there is none. */
export function boundaryOf(contentType: string): string | null {
  const m = PARAM.exec(contentType);
  if (!m) return null;
  return m[1] !== undefined ? m[1].replace(/\\(.)/g, "$1") : (m[2] ?? "");
}

export const validBoundary = (boundary: string) => BCHARS.test(boundary);

export function checkMultipartBoundaries(app: FastifyInstance): void {
  app.addHook("onRequest", async (req) => {
    const type = req.headers["content-type"];
    if (typeof type !== "string" || !/^\s*multipart\//i.test(type)) return;
    const boundary = boundaryOf(type);
    if (boundary === null || !validBoundary(boundary))
      throw new AppError(
        400,
        "invalid_multipart",
        "The multipart boundary must be 1 to 70 characters (RFC 2046).",
      );
  });
}
