import { createDecipheriv, createECDH, type ECDH, hkdfSync, randomBytes } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One request a local receiver got. */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** An HTTP server on 127.0.0.1 (port 0) that records requests and answers `status(path)`. */
export async function startReceiver(status: (path: string) => number = () => 201) {
  const got: Received[] = [];
  const waiters: (() => void)[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = req.url ?? "/";
      got.push({ path, headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(status(path)).end();
      for (const w of waiters.splice(0)) w();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    got,
    /** Resolves once `n` requests in all have arrived. */
    async waitFor(n: number): Promise<Received[]> {
      while (got.length < n) await new Promise<void>((r) => waiters.push(r));
      return got.slice(0, n);
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** What a browser holds for one push subscription: a P-256 key pair and a 16-byte auth secret. */
export interface BrowserKeys {
  ecdh: ECDH;
  auth: Buffer;
  keys: { p256dh: string; auth: string };
}

export function browserKeys(): BrowserKeys {
  const ecdh = createECDH("prime256v1");
  ecdh.generateKeys();
  const auth = randomBytes(16);
  return {
    ecdh,
    auth,
    keys: { p256dh: ecdh.getPublicKey().toString("base64url"), auth: auth.toString("base64url") },
  };
}

/**
 * Decrypt an aes128gcm push message as the browser does (RFC 8291 on RFC 8188), with
 * node:crypto only: header salt(16) | rs(4) | idlen(1) | keyid (the sender's public key), then
 * one record sealed with AES-128-GCM under keys derived by HKDF from the ECDH secret.
 */
export function decryptPush(body: Buffer, b: BrowserKeys): string {
  const salt = body.subarray(0, 16);
  const idLen = body[20] as number;
  const senderPublic = body.subarray(21, 21 + idLen);
  const record = body.subarray(21 + idLen);
  const shared = b.ecdh.computeSecret(senderPublic);
  const info = Buffer.concat([Buffer.from("WebPush: info\0"), b.ecdh.getPublicKey(), senderPublic]);
  const ikm = Buffer.from(hkdfSync("sha256", shared, b.auth, info, 32));
  const cek = Buffer.from(hkdfSync("sha256", ikm, salt, Buffer.from("Content-Encoding: aes128gcm\0"), 16));
  const nonce = Buffer.from(hkdfSync("sha256", ikm, salt, Buffer.from("Content-Encoding: nonce\0"), 12));
  const decipher = createDecipheriv("aes-128-gcm", cek, nonce);
  decipher.setAuthTag(record.subarray(record.length - 16));
  const plain = Buffer.concat([decipher.update(record.subarray(0, record.length - 16)), decipher.final()]);
  // Padding: the last record ends with the delimiter 0x02 followed by zero bytes.
  let end = plain.length;
  while (end > 0 && plain[end - 1] === 0) end--;
  if (plain[end - 1] !== 2) throw new Error("not a final aes128gcm record");
  return plain.subarray(0, end - 1).toString("utf8");
}
