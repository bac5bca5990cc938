/**
 * The guest half of the SDK boundary: JavaScript evaluated inside each fresh QuickJS context
 * before the user's module. It defines the SDK globals (contracts/script-platform.md) on top of
 * two host functions it receives as arguments and never exposes: `hostCall(op, json, ...buffers)`
 * (returns a promise of `[json, ...buffers]`) and `hostLog(level, text)`.
 *
 * Values cross as JSON text; bytes (Uint8Array / ArrayBuffer) travel beside it as ArrayBuffers,
 * replaced in the JSON by `{<marker>: index}` where the marker is a per-run random key. Nothing
 * here is trusted by the host: a script can tamper with its own copy of these functions, and the
 * host re-validates every value it receives (boundary.ts).
 */
export const PRELUDE_SOURCE = `(function (hostCall, hostLog, marker) {
  "use strict";
  const U8 = Uint8Array, AB = ArrayBuffer, stringify = JSON.stringify, parse = JSON.parse;
  const freeze = Object.freeze, keys = Object.keys;
  function encode(value) {
    const blobs = [];
    const json = stringify(value === undefined ? null : value, function (k, v) {
      if (v instanceof U8) { blobs[blobs.length] = v.slice().buffer; return { [marker]: blobs.length - 1 }; }
      if (v instanceof AB) { blobs[blobs.length] = v.slice(0); return { [marker]: blobs.length - 1 }; }
      return v;
    });
    return [json === undefined ? "null" : json, blobs];
  }
  function decode(json, blobs) {
    return parse(json, function (k, v) {
      if (v !== null && typeof v === "object" && typeof v[marker] === "number" && keys(v).length === 1) return new U8(blobs[v[marker]]);
      return v;
    });
  }
  function call(op, args) {
    const e = encode(args);
    return hostCall(op, e[0], ...e[1]).then(function (r) { return decode(r[0], r.slice(1)); });
  }
  function text(args) {
    let out = "";
    for (let i = 0; i < args.length; i++) {
      const a = args[i];
      let s;
      if (typeof a === "string") s = a;
      else if (a instanceof Error) s = String(a);
      else { try { s = stringify(a); } catch (_) { s = String(a); } if (s === undefined) s = String(a); }
      out += (i > 0 ? " " : "") + s;
    }
    return out;
  }
  const level = (l) => (...args) => { hostLog(l, text(args)); };
  const method = (op, name) => (...args) => call(op, [name, ...args]);
  const handle = (kind, name, ops) => {
    const h = {};
    for (const op of ops) h[op] = method(kind + "." + op, name);
    return freeze(h);
  };
  const sdk = {
    log: freeze({ trace: level("trace"), debug: level("debug"), info: level("info"), warn: level("warn"), error: level("error") }),
    kv: freeze({ collection: (name) => handle("kv", name, ["get", "set", "delete", "has", "list"]) }),
    docs: freeze({ collection: (name) => handle("docs", name, ["create", "get", "replace", "patch", "delete", "list"]) }),
    files: freeze({ collection: (name) => handle("files", name, ["create", "head", "get", "update", "delete", "list"]) }),
    secrets: freeze({
      get: (name) => call("secrets.get", [name]),
      set: (name, value) => call("secrets.set", [name, value]),
      delete: (name) => call("secrets.delete", [name]),
      list: () => call("secrets.list", []),
    }),
    http: freeze({
      get: (url, body, opts) => call("http.request", ["GET", url, body, opts]),
      head: (url, body, opts) => call("http.request", ["HEAD", url, body, opts]),
      delete: (url, body, opts) => call("http.request", ["DELETE", url, body, opts]),
      post: (url, body, opts) => call("http.request", ["POST", url, body, opts]),
      put: (url, body, opts) => call("http.request", ["PUT", url, body, opts]),
      patch: (url, body, opts) => call("http.request", ["PATCH", url, body, opts]),
    }),
    pubsub: freeze({
      publishDurable: (topic, message) => call("pubsub.publishDurable", [topic, message]),
      subscriberToken: (topic, opts) => call("pubsub.subscriberToken", [topic, opts]),
    }),
  };
  for (const name of keys(sdk)) Object.defineProperty(globalThis, name, { value: sdk[name], enumerable: false });
  return async function run(ns, ctxJson, ...ctxBlobs) {
    const handler = ns.default;
    if (typeof handler !== "function") throw new TypeError("The script has no default export function.");
    const result = await handler(decode(ctxJson, ctxBlobs));
    const e = encode(result);
    return [e[0], ...e[1]];
  };
})`;
