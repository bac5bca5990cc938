import { createHmac } from "node:crypto";

/**
 * RFC 6238 TOTP over node:crypto (HMAC-SHA1, 30 s step, 6 digits). Hand-written because
 * otplib refuses the 10-byte keys the timetable service issues (DESIGN.md).
 */
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/** RFC 4648 base32 → bytes; case, spaces and padding are ignored. */
export function base32Decode(input: string): Buffer {
  const s = input.toUpperCase().replace(/[\s=]/g, "");
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const ch of s) {
    const idx = ALPHABET.indexOf(ch);
    if (idx === -1) throw new Error("The key is not base32.");
    value = (value << 5) | idx;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** HOTP (RFC 4226) of a counter. */
export function hotp(key: Buffer, counter: number, digits = 6, algorithm = "sha1"): string {
  const msg = Buffer.alloc(8);
  msg.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac(algorithm, key).update(msg).digest();
  const offset = (mac[mac.length - 1] as number) & 0x0f;
  const bin = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(bin % 10 ** digits).padStart(digits, "0");
}

/** TOTP of epoch milliseconds `timeMs`. */
export function totp(
  key: Buffer,
  timeMs: number,
  opts: { stepS?: number; digits?: number; algorithm?: string } = {},
): string {
  const counter = Math.floor(timeMs / 1000 / (opts.stepS ?? 30));
  return hotp(key, counter, opts.digits ?? 6, opts.algorithm ?? "sha1");
}
