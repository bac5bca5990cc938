/**
 * The guest half of the SDK boundary: JavaScript evaluated inside each fresh QuickJS context
 * before the user's module. It defines the SDK globals (the script-platform contract) on top of
 * two host functions it receives as arguments and never exposes: `hostCall(op, json, ...buffers)`
 * (returns a promise of `[json, ...buffers]`) and `hostLog(level, text)`.
 *
 * Values cross as JSON text; bytes (Uint8Array / ArrayBuffer) travel beside it as ArrayBuffers,
 * replaced in the JSON by `{<marker>: index}` where the marker is a per-run random key. Nothing
 * here is trusted by the host: a script can tamper with its own copy of these functions, and the
 * host re-validates every value it receives (boundary.ts).
 *
 * Compiling JavaScript is most of the cost of a fresh context, so each SDK global's code is kept
 * as a string and compiled on the global's first use (a script that uses only `kv` never pays
 * for `files` or `http`).
 */
const SDK_PIECES: Record<string, string> = {
  log: `(function (call, hostLog, freeze, stringify) {
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
    return freeze({ trace: level("trace"), debug: level("debug"), info: level("info"), warn: level("warn"), error: level("error") });
  })`,
  kv: `(function (call, hostLog, freeze) {
    return freeze({ collection: (name) => freeze({
      get: (k) => call("kv.get", [name, k]),
      set: (k, v) => call("kv.set", [name, k, v]),
      delete: (k) => call("kv.delete", [name, k]),
      has: (k) => call("kv.has", [name, k]),
      list: (o) => call("kv.list", [name, o]),
    }) });
  })`,
  docs: `(function (call, hostLog, freeze) {
    return freeze({ collection: (name) => freeze({
      create: (body, o) => call("docs.create", [name, body, o]),
      get: (id) => call("docs.get", [name, id]),
      replace: (id, body) => call("docs.replace", [name, id, body]),
      patch: (id, body) => call("docs.patch", [name, id, body]),
      delete: (id) => call("docs.delete", [name, id]),
      list: (o) => call("docs.list", [name, o]),
    }) });
  })`,
  files: `(function (call, hostLog, freeze) {
    return freeze({ collection: (name) => freeze({
      create: (f) => call("files.create", [name, f]),
      head: (n) => call("files.head", [name, n]),
      get: (n) => call("files.get", [name, n]),
      update: (f) => call("files.update", [name, f]),
      delete: (n) => call("files.delete", [name, n]),
      list: (o) => call("files.list", [name, o]),
    }) });
  })`,
  secrets: `(function (call, hostLog, freeze) {
    return freeze({
      get: (name) => call("secrets.get", [name]),
      set: (name, value) => call("secrets.set", [name, value]),
      delete: (name) => call("secrets.delete", [name]),
      list: () => call("secrets.list", []),
    });
  })`,
  http: `(function (call, hostLog, freeze) {
    const verb = (m) => (url, body, opts) => call("http.request", [m, url, body, opts]);
    return freeze({ get: verb("GET"), head: verb("HEAD"), post: verb("POST"), put: verb("PUT"), patch: verb("PATCH"), delete: verb("DELETE") });
  })`,
  pubsub: `(function (call, hostLog, freeze) {
    return freeze({
      publishDurable: (topic, message) => call("pubsub.publishDurable", [topic, message]),
      subscriberToken: (topic, opts) => call("pubsub.subscriberToken", [topic, opts]),
    });
  })`,
};

export const PRELUDE_SOURCE = `(function (hostCall, hostLog, marker, hostRandom, webApis) {
  "use strict";
  delete globalThis.InternalError;
  const U8 = Uint8Array, AB = ArrayBuffer, stringify = JSON.stringify, parse = JSON.parse;
  const freeze = Object.freeze, keys = Object.keys, define = Object.defineProperty, compile = eval;
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
    // Without bytes there is nothing to revive (markers only ever stand for bytes sent beside).
    if (blobs.length === 0) return parse(json);
    return parse(json, function (k, v) {
      if (v !== null && typeof v === "object" && typeof v[marker] === "number" && keys(v).length === 1) return new U8(blobs[v[marker]]);
      return v;
    });
  }
  function call(op, args) {
    const e = encode(args);
    return hostCall(op, e[0], ...e[1]).then(function (r) { return decode(r[0], r.slice(1)); });
  }
  const pieces = ${JSON.stringify(SDK_PIECES)};
  for (const name of keys(pieces)) {
    define(globalThis, name, {
      configurable: true,
      enumerable: false,
      get() {
        const value = compile(pieces[name])(call, hostLog, freeze, stringify);
        define(globalThis, name, { value, configurable: false, enumerable: false, writable: false });
        return value;
      },
    });
  }
  // In-sandbox web APIs (web-apis.ts) build on the same SDK call path.
  if (typeof webApis === "function") webApis(freeze({ call, randomBytes: (n) => new U8(hostRandom(n)) }));
  return async function run(ns, ctxJson, ...ctxBlobs) {
    const handler = ns.default;
    if (typeof handler !== "function") throw new TypeError("The script has no default export function.");
    const result = await handler(decode(ctxJson, ctxBlobs));
    const e = encode(result);
    return [e[0], ...e[1]];
  };
})`;
