import { randomFillSync } from "node:crypto";

/**
 * Random bytes for ids, drawn from a pool refilled 256 ids at a time. uuid's own source calls
 * `crypto.getRandomValues` for every id, a visible share of a hot route's CPU; a slice of a
 * pooled `randomFillSync` costs a small fraction of that (kit README).
 * The pool and the sequence below are per process by nature, like uuid's own state.
 */
const POOL_BYTES = 256 * 16;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let poolAt = POOL_BYTES;
const order = { msecs: Number.NEGATIVE_INFINITY, seq: 0 };

const HEX: string[] = Array.from({ length: 256 }, (_, i) => (i + 0x100).toString(16).slice(1));
/** Two bytes as four hex digits, for the 48-bit time (it changes once a millisecond). */
const hex2 = (v: number) => (HEX[(v >>> 8) & 0xff] as string) + HEX[v & 0xff];

/**
 * Time-ordered UUID v7 (DESIGN.md: ids are UUID v7 so they sort by creation time), laid out as
 * the uuid package's v7 lays it out (RFC 9562): 48 bits of milliseconds, version 7, a 26-bit
 * counter seeded from random bits that keeps ids increasing within one millisecond (method 1),
 * variant 10, then random bits. Written straight from the pool into the string: ids are made on
 * every request and run, and the library's per-id byte array and options object showed up in
 * the hot path's profile.
 */
export function newId(): string {
  if (poolAt + 16 > POOL_BYTES) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const r = poolAt;
  poolAt += 16;
  const now = Date.now();
  if (now > order.msecs) {
    order.seq = ((pool[r + 6]! & 0x7f) << 24) | (pool[r + 7]! << 16) | (pool[r + 8]! << 8) | pool[r + 9]!;
    order.msecs = now;
  } else {
    order.seq = (order.seq + 1) | 0;
    if (order.seq === 0) order.msecs++;
  }
  const ms = order.msecs;
  const seq = order.seq;
  const hi = Math.floor(ms / 0x100000000);
  const lo = ms >>> 0;
  return (
    hex2(hi) +
    hex2(lo >>> 16) +
    "-" +
    hex2(lo) +
    "-" +
    HEX[0x70 | ((seq >>> 28) & 0x0f)] +
    HEX[(seq >>> 20) & 0xff] +
    "-" +
    HEX[0x80 | ((seq >>> 14) & 0x3f)] +
    HEX[(seq >>> 6) & 0xff] +
    "-" +
    HEX[((seq << 2) & 0xff) | (pool[r + 10]! & 0x03)] +
    HEX[pool[r + 11]!] +
    HEX[pool[r + 12]!] +
    HEX[pool[r + 13]!] +
    HEX[pool[r + 14]!] +
    HEX[pool[r + 15]!]
  );
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID_RE.test(value);
}
