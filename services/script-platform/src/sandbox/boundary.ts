import type { SandboxKnobs } from "./limits.js";

/**
 * The host half of the value boundary (see prelude.ts): JSON text plus side buffers in both
 * directions, and the size knobs checked on every value that crosses. Decoded byte values are
 * Node Buffers on the host side.
 */
export class SizeLimitError extends Error {
  constructor(readonly what: string) {
    super(`A value exceeds the sandbox size limit (${what}).`);
    this.name = "SizeLimitError";
  }
}

export type SizeKnobs = Pick<SandboxKnobs, "max_string_size" | "max_array_size" | "max_map_size">;

/** Throws SizeLimitError when a string, byte value, array or object is over its knob. */
export function checkSize(value: unknown, limits: SizeKnobs): void {
  walk(value, limits);
}

/**
 * Whether `value` holds any byte value (Uint8Array, Buffer), checking sizes on the way when
 * `limits` is given: one walk serves both, and a value without bytes is encoded without a
 * replacer (V8 calls one for every key).
 */
function walk(value: unknown, limits: SizeKnobs | null): boolean {
  let bytes = false;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "string") {
      if (limits && v.length > limits.max_string_size) throw new SizeLimitError("max_string_size");
    } else if (v instanceof Uint8Array) {
      bytes = true;
      if (limits && v.byteLength > limits.max_string_size) throw new SizeLimitError("max_string_size");
    } else if (Array.isArray(v)) {
      if (limits && v.length > limits.max_array_size) throw new SizeLimitError("max_array_size");
      for (const x of v) stack.push(x);
    } else if (v !== null && typeof v === "object") {
      const ks = Object.keys(v);
      if (limits && ks.length > limits.max_map_size) throw new SizeLimitError("max_map_size");
      for (const k of ks) {
        if (limits && k.length > limits.max_string_size) throw new SizeLimitError("max_string_size");
        stack.push((v as Record<string, unknown>)[k]);
      }
    }
  }
  return bytes;
}

/** JSON text + buffers from the guest → host value (Buffers for bytes), size-checked. */
export function decodeFromGuest(
  json: string,
  blobs: Uint8Array[],
  marker: string,
  limits: SizeKnobs,
): unknown {
  // No bytes came along and no marker is in the text: nothing to revive (a reviver costs a call
  // per value). A marker without its bytes still goes through the reviver and fails there.
  const value =
    blobs.length === 0 && !json.includes(marker) ? JSON.parse(json) : reviveBytes(json, blobs, marker);
  checkSize(value, limits);
  return value;
}

function reviveBytes(json: string, blobs: Uint8Array[], marker: string): unknown {
  return JSON.parse(json, (_k, v) => {
    if (v !== null && typeof v === "object" && !Array.isArray(v)) {
      const ks = Object.keys(v);
      if (ks.length === 1 && ks[0] === marker) {
        const idx = (v as Record<string, unknown>)[marker];
        const b = typeof idx === "number" ? blobs[idx] : undefined;
        if (!b) throw new TypeError("Malformed byte value.");
        return Buffer.from(b.buffer, b.byteOffset, b.byteLength);
      }
    }
    return v;
  });
}

/**
 * Host value → JSON text + buffers for the guest, size-checked unless `check` is false (the
 * handler's own ctx: the request body is bounded by the route's body cap and the memory limit).
 */
export function encodeForGuest(
  value: unknown,
  marker: string,
  limits: SizeKnobs,
  check = true,
): { json: string; blobs: Uint8Array[] } {
  if (!walk(value, check ? limits : null))
    return { json: JSON.stringify(value ?? null) ?? "null", blobs: [] };
  const blobs: Uint8Array[] = [];
  const json = JSON.stringify(
    value === undefined ? null : value,
    function (this: Record<string, unknown>, k, v) {
      // Buffer has a toJSON that runs before a replacer sees it; look at the holder's own value.
      const orig = this[k];
      if (orig instanceof Uint8Array) {
        blobs.push(orig);
        return { [marker]: blobs.length - 1 };
      }
      return v;
    },
  );
  return { json: json ?? "null", blobs };
}
