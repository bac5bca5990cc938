import { systemClock } from "@app/kit/clock";
import { captureLogger } from "@app/kit/logger";
import { describe, expect, it } from "vitest";
import { decodeFromGuest, encodeForGuest, SizeLimitError } from "../../src/sandbox/boundary.js";
import { createEngine } from "../../src/sandbox/engine.js";
import { resolveLimits, SANDBOX_DEFAULTS } from "../../src/sandbox/limits.js";

// The value boundary takes a fast path (no replacer / reviver) for values without bytes; these
// pin down that values with and without bytes cross alike either way.
const engine = createEngine({ clock: systemClock, logger: captureLogger().logger });
const run = (source: string, ctx: unknown) =>
  engine.run({
    name: "main",
    source,
    modules: new Map(),
    ctx,
    limits: resolveLimits({}, 30),
    host: async () => null,
  });
const MARKER = "__blob_test";

describe("value boundary", () => {
  it("hands ctx to the handler with and without bytes", async () => {
    const echo = `export default (ctx) => ({ isBytes: ctx.request.body instanceof Uint8Array, body: ctx.request.body, headers: ctx.request.headers })`;
    const plain = await run(echo, { request: { body: { a: [1, "x", null] }, headers: { h: "v" } } });
    expect(plain).toMatchObject({
      ok: true,
      value: { isBytes: false, body: { a: [1, "x", null] }, headers: { h: "v" } },
    });
    const bytes = await run(echo, { request: { body: new Uint8Array([1, 2, 3]), headers: {} } });
    expect(bytes.ok).toBe(true);
    const v = (bytes as { value: { isBytes: boolean; body: Buffer } }).value;
    expect(v.isBytes).toBe(true);
    expect([...v.body]).toEqual([1, 2, 3]);
  });

  it("returns bytes from anywhere in a result: nested deep, behind toJSON, or none at all", async () => {
    const deep = await run(
      `export default () => { let v = { b: new Uint8Array([9]) }; for (let i = 0; i < 40; i++) v = { v }; return v; }`,
      {},
    );
    expect(deep.ok).toBe(true);
    let node = (deep as { value: Record<string, unknown> }).value;
    for (let i = 0; i < 40; i++) node = node.v as Record<string, unknown>;
    expect(Buffer.isBuffer(node.b)).toBe(true);
    expect([...(node.b as Buffer)]).toEqual([9]);

    const viaToJson = await run(
      `export default () => ({ x: { toJSON() { return { y: new Uint8Array([5, 6]) }; } } })`,
      {},
    );
    expect(viaToJson.ok).toBe(true);
    const y = (viaToJson as { value: { x: { y: Buffer } } }).value.x.y;
    expect(Buffer.isBuffer(y)).toBe(true);
    expect([...y]).toEqual([5, 6]);

    const plain = await run(`export default () => ({ a: [1, { b: "c" }], d: null, e: true })`, {});
    expect(plain).toMatchObject({ ok: true, value: { a: [1, { b: "c" }], d: null, e: true } });
    const nothing = await run(`export default () => undefined`, {});
    expect(nothing).toMatchObject({ ok: true, value: null });
  });

  it("decodes guest values with and without bytes, and refuses a marker without its bytes", () => {
    const limits = SANDBOX_DEFAULTS;
    expect(decodeFromGuest('{"a":[1,2]}', [], MARKER, limits)).toEqual({ a: [1, 2] });
    const withBytes = decodeFromGuest(`{"a":{"${MARKER}":0}}`, [new Uint8Array([4])], MARKER, limits) as {
      a: Buffer;
    };
    expect(Buffer.isBuffer(withBytes.a)).toBe(true);
    expect(() => decodeFromGuest(`{"a":{"${MARKER}":0}}`, [], MARKER, limits)).toThrow(
      "Malformed byte value",
    );
    expect(() =>
      decodeFromGuest(JSON.stringify({ s: "x".repeat(20) }), [], MARKER, { ...limits, max_string_size: 10 }),
    ).toThrow(SizeLimitError);
  });

  it("encodes host values with bytes beside the text and checks sizes either way", () => {
    const limits = SANDBOX_DEFAULTS;
    expect(encodeForGuest({ a: 1, b: [null, "x"] }, MARKER, limits)).toEqual({
      json: '{"a":1,"b":[null,"x"]}',
      blobs: [],
    });
    expect(encodeForGuest(undefined, MARKER, limits)).toEqual({ json: "null", blobs: [] });
    const bytes = Buffer.from([1, 2]);
    expect(encodeForGuest({ d: bytes }, MARKER, limits)).toEqual({
      json: `{"d":{"${MARKER}":0}}`,
      blobs: [bytes],
    });
    const small = { ...limits, max_array_size: 2 };
    expect(() => encodeForGuest({ a: [1, 2, 3] }, MARKER, small)).toThrow(SizeLimitError);
    expect(() => encodeForGuest({ a: [1, 2, 3], b: bytes }, MARKER, small)).toThrow(SizeLimitError);
    // The handler's ctx is not size-checked (the route's body cap bounds it).
    expect(encodeForGuest({ a: [1, 2, 3] }, MARKER, small, false).json).toBe('{"a":[1,2,3]}');
  });
});
