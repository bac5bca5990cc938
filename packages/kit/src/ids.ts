import { randomFillSync } from "node:crypto";
import { v7 } from "uuid";

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

function random16(): Uint8Array {
  if (poolAt + 16 > POOL_BYTES) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const bytes = pool.subarray(poolAt, poolAt + 16);
  poolAt += 16;
  return bytes;
}

/**
 * Time-ordered UUID v7 (DESIGN.md: ids are UUID v7 so they sort by creation time). Within one
 * millisecond a counter seeded from random bits keeps them increasing (RFC 9562, method 1), as
 * uuid does when it draws its own randomness.
 */
export function newId(): string {
  const random = random16();
  const now = Date.now();
  if (now > order.msecs) {
    order.seq = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!;
    order.msecs = now;
  } else {
    order.seq = (order.seq + 1) | 0;
    if (order.seq === 0) order.msecs++;
  }
  return v7({ random, msecs: order.msecs, seq: order.seq });
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID_RE.test(value);
}
