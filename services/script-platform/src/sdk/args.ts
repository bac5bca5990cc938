import { ScriptVisibleError } from "../sandbox/engine.js";

/** Argument checks for SDK calls: failures are errors the script sees, naming the call and field. */
export function fail(call: string, message: string): never {
  throw new ScriptVisibleError(`${call}: ${message}`);
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Uint8Array);
}

export function name(call: string, field: string, v: unknown, max = 512): string {
  if (v === undefined || v === null) fail(call, `missing required field: ${field}`);
  if (typeof v !== "string" || v.length === 0) fail(call, `${field} must be a non-empty string`);
  if (v.length > max) fail(call, `${field} must be at most ${max} characters`);
  return v;
}

export function options<K extends string>(
  call: string,
  v: unknown,
  allowed: readonly K[],
): Partial<Record<K, unknown>> {
  if (v === undefined || v === null) return {};
  if (!isPlainObject(v)) fail(call, "options must be an object");
  for (const k of Object.keys(v))
    if (!(allowed as readonly string[]).includes(k)) fail(call, `unknown option: ${k}`);
  return v as Partial<Record<K, unknown>>;
}

export function optString(call: string, field: string, v: unknown, max = 1024): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") fail(call, `${field} must be a string`);
  if (v.length > max) fail(call, `${field} must be at most ${max} characters`);
  return v;
}

export function limit(call: string, v: unknown, def = 100, max = 1000): number {
  if (v === undefined || v === null) return def;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > max)
    fail(call, `limit must be an integer from 1 to ${max}`);
  return v;
}

/** Set an own property even when the key is "__proto__" (no prototype setter involved). */
export function defineOwn(o: Record<string, unknown>, k: string, v: unknown): void {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}
