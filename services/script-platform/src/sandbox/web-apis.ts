/**
 * In-sandbox web APIs (owned by the authoring work, issue 11): JavaScript source evaluated in every
 * new QuickJS context after the SDK globals and before user modules. It evaluates to a function
 * expression called once per context with `host = { call(op, args), randomBytes(n) }`.
 * Loaded inside worker threads: import nothing here.
 *
 * What it defines (only where QuickJS lacks it): TextEncoder, TextDecoder (UTF-8), atob, btoa,
 * URL, URLSearchParams, Headers, Request, Response, fetch, crypto.getRandomValues,
 * crypto.randomUUID, structuredClone, queueMicrotask, setTimeout/clearTimeout,
 * setInterval/clearInterval.
 * - fetch goes through the SDK's `http.request`: the same scheme/port rules and private-address
 *   deny-list, every redirect hop re-checked, the same size and time caps. Response bodies arrive
 *   as UTF-8 text from that path, so binary bodies are not byte-exact.
 * - timers wait on the host (`timer.sleep`), so they never outlive the run: the run's deadline
 *   ends them with the run.
 */
export const WEB_APIS_PRELUDE = String.raw`(function (host) {
  "use strict";
  const G = globalThis;
  const define = (name, value) => {
    if (typeof G[name] === "undefined")
      Object.defineProperty(G, name, { value, configurable: true, writable: true, enumerable: false });
  };

  // --- UTF-8 ---------------------------------------------------------------------------------
  function utf8Encode(str) {
    const s = String(str);
    const out = [];
    for (let i = 0; i < s.length; i++) {
      let c = s.charCodeAt(i);
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
        const d = s.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) { c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00); i++; }
        else c = 0xfffd;
      } else if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
      if (c < 0x80) out.push(c);
      else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
      else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
      else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    }
    return new Uint8Array(out);
  }
  function utf8Decode(bytes) {
    let out = "";
    let i = 0;
    const n = bytes.length;
    while (i < n) {
      const b = bytes[i++];
      let c = 0xfffd;
      if (b < 0x80) c = b;
      else if (b >= 0xc2 && b < 0xe0 && i < n && (bytes[i] & 0xc0) === 0x80) c = ((b & 31) << 6) | (bytes[i++] & 63);
      else if (b >= 0xe0 && b < 0xf0 && i + 1 < n && (bytes[i] & 0xc0) === 0x80 && (bytes[i + 1] & 0xc0) === 0x80) {
        c = ((b & 15) << 12) | ((bytes[i] & 63) << 6) | (bytes[i + 1] & 63); i += 2;
        if (c < 0x800 || (c >= 0xd800 && c <= 0xdfff)) c = 0xfffd;
      } else if (b >= 0xf0 && b < 0xf5 && i + 2 < n && (bytes[i] & 0xc0) === 0x80 && (bytes[i + 1] & 0xc0) === 0x80 && (bytes[i + 2] & 0xc0) === 0x80) {
        c = ((b & 7) << 18) | ((bytes[i] & 63) << 12) | ((bytes[i + 1] & 63) << 6) | (bytes[i + 2] & 63); i += 3;
        if (c < 0x10000 || c > 0x10ffff) c = 0xfffd;
      }
      if (c > 0xffff) { c -= 0x10000; out += String.fromCharCode(0xd800 + (c >> 10), 0xdc00 + (c & 1023)); }
      else out += String.fromCharCode(c);
    }
    return out;
  }
  function toBytes(v) {
    if (v instanceof Uint8Array) return v;
    if (v instanceof ArrayBuffer) return new Uint8Array(v);
    if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
    return utf8Encode(v === undefined ? "" : v);
  }
  class TextEncoder {
    get encoding() { return "utf-8"; }
    encode(s) { return utf8Encode(s === undefined ? "" : s); }
  }
  class TextDecoder {
    constructor(label) {
      const l = String(label === undefined ? "utf-8" : label).toLowerCase();
      if (l !== "utf-8" && l !== "utf8") throw new RangeError("TextDecoder supports utf-8 only");
    }
    get encoding() { return "utf-8"; }
    decode(b) {
      if (b === undefined) return "";
      let s = utf8Decode(toBytes(b));
      if (s.charCodeAt(0) === 0xfeff) s = s.slice(1);
      return s;
    }
  }
  define("TextEncoder", TextEncoder);
  define("TextDecoder", TextDecoder);

  // --- base64 --------------------------------------------------------------------------------
  const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  define("btoa", function btoa(data) {
    const s = String(data);
    let out = "";
    for (let i = 0; i < s.length; i += 3) {
      const a = s.charCodeAt(i), b = s.charCodeAt(i + 1), c = s.charCodeAt(i + 2);
      if (a > 255 || b > 255 || c > 255) throw new Error("InvalidCharacterError: btoa takes Latin-1 text only");
      const n = (a << 16) | ((b || 0) << 8) | (c || 0);
      out += B64[(n >> 18) & 63] + B64[(n >> 12) & 63] + (i + 1 < s.length ? B64[(n >> 6) & 63] : "=") + (i + 2 < s.length ? B64[n & 63] : "=");
    }
    return out;
  });
  define("atob", function atob(data) {
    let s = String(data).replace(/[\t\n\f\r ]/g, "");
    if (s.length % 4 === 0) s = s.replace(/==?$/, "");
    if (s.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(s)) throw new Error("InvalidCharacterError: atob input is not base64");
    let out = "", bits = 0, acc = 0;
    for (let i = 0; i < s.length; i++) {
      acc = (acc << 6) | B64.indexOf(s[i]); bits += 6;
      if (bits >= 8) { bits -= 8; out += String.fromCharCode((acc >> bits) & 255); }
    }
    return out;
  });

  // --- URLSearchParams and URL ---------------------------------------------------------------
  const enc = (s) => encodeURIComponent(s).replace(/%20/g, "+").replace(/[!'()~]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
  const dec = (s) => { try { return decodeURIComponent(s.replace(/\+/g, " ")); } catch (_) { return s; } };
  class URLSearchParams {
    constructor(init) {
      this._list = [];
      this._url = null;
      if (init === undefined || init === null) return;
      if (typeof init === "string") this._parse(init);
      else if (init instanceof URLSearchParams) this._list = init._list.map((p) => [p[0], p[1]]);
      else if (typeof init[Symbol.iterator] === "function") for (const p of init) this._list.push([String(p[0]), String(p[1])]);
      else for (const k of Object.keys(init)) this._list.push([k, String(init[k])]);
    }
    _parse(s) {
      this._list = [];
      const q = s.charAt(0) === "?" ? s.slice(1) : s;
      for (const part of q.split("&")) {
        if (part === "") continue;
        const i = part.indexOf("=");
        this._list.push(i < 0 ? [dec(part), ""] : [dec(part.slice(0, i)), dec(part.slice(i + 1))]);
      }
    }
    _changed() { if (this._url) this._url._search = this._list.length ? "?" + this.toString() : ""; }
    get size() { return this._list.length; }
    append(k, v) { this._list.push([String(k), String(v)]); this._changed(); }
    delete(k) { k = String(k); this._list = this._list.filter((p) => p[0] !== k); this._changed(); }
    get(k) { k = String(k); const p = this._list.find((x) => x[0] === k); return p ? p[1] : null; }
    getAll(k) { k = String(k); return this._list.filter((x) => x[0] === k).map((x) => x[1]); }
    has(k) { k = String(k); return this._list.some((x) => x[0] === k); }
    set(k, v) {
      k = String(k); v = String(v);
      const i = this._list.findIndex((x) => x[0] === k);
      if (i < 0) this._list.push([k, v]);
      else { this._list[i] = [k, v]; this._list = this._list.filter((x, j) => j <= i || x[0] !== k); }
      this._changed();
    }
    sort() { this._list.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)); this._changed(); }
    forEach(fn, self) { for (const p of this._list) fn.call(self, p[1], p[0], this); }
    keys() { return this._list.map((p) => p[0])[Symbol.iterator](); }
    values() { return this._list.map((p) => p[1])[Symbol.iterator](); }
    entries() { return this._list.map((p) => [p[0], p[1]])[Symbol.iterator](); }
    [Symbol.iterator]() { return this.entries(); }
    toString() { return this._list.map((p) => enc(p[0]) + "=" + enc(p[1])).join("&"); }
  }
  define("URLSearchParams", URLSearchParams);

  const DEFAULT_PORTS = { "http:": "80", "https:": "443", "ws:": "80", "wss:": "443", "ftp:": "21" };
  const URL_RE = /^([a-zA-Z][a-zA-Z0-9+.-]*:)(?:\/\/(?:([^:@\/?#]*)(?::([^@\/?#]*))?@)?(\[[^\]]*\]|[^:\/?#]*)(?::(\d*))?)?([^?#]*)(\?[^#]*)?(#.*)?$/;
  function normalizePath(p) {
    const out = [];
    const parts = p.split("/");
    for (let i = 0; i < parts.length; i++) {
      const s = parts[i];
      if (s === "..") { if (out.length > 1) out.pop(); if (i === parts.length - 1) out.push(""); }
      else if (s === ".") { if (i === parts.length - 1) out.push(""); }
      else out.push(s);
    }
    const r = out.join("/");
    return r.charAt(0) === "/" ? r : "/" + r;
  }
  const escapePath = (p) => p.replace(/[ "<>\x60{}]/g, (c) => encodeURIComponent(c));
  class URL {
    constructor(url, base) {
      let s = String(url).trim();
      if (base !== undefined && !/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(s)) {
        const b = base instanceof URL ? base : new URL(base);
        if (s.startsWith("//")) s = b.protocol + s;
        else if (s.startsWith("/")) s = b.origin + s;
        else if (s.startsWith("?")) s = b.origin + b.pathname + s;
        else if (s.startsWith("#")) s = b.origin + b.pathname + b.search + s;
        else if (s === "") s = b.origin + b.pathname + b.search;
        else s = b.origin + b.pathname.replace(/[^/]*$/, "") + s;
      }
      const m = URL_RE.exec(s);
      if (!m) throw new TypeError("Invalid URL: " + String(url).slice(0, 200));
      this._protocol = m[1].toLowerCase();
      const special = this._protocol in DEFAULT_PORTS;
      const host = (m[4] || "").toLowerCase();
      if (special && host === "") throw new TypeError("Invalid URL: " + String(url).slice(0, 200));
      if (/[\s<>^|%]/.test(host)) throw new TypeError("Invalid URL: " + String(url).slice(0, 200));
      this._username = m[2] || "";
      this._password = m[3] || "";
      this._hostname = host;
      const port = m[5] || "";
      if (port !== "" && Number(port) > 65535) throw new TypeError("Invalid URL: " + String(url).slice(0, 200));
      this._port = port === DEFAULT_PORTS[this._protocol] ? "" : port === "" ? "" : String(Number(port));
      this._pathname = special ? escapePath(normalizePath(m[6] || "/")) : m[6] || "";
      this._search = m[7] && m[7] !== "?" ? m[7] : "";
      this._hash = m[8] && m[8] !== "#" ? m[8] : "";
      this._params = new URLSearchParams(this._search);
      this._params._url = this;
    }
    get protocol() { return this._protocol; }
    set protocol(v) { this._protocol = String(v).replace(/:?$/, ":").toLowerCase(); }
    get username() { return this._username; }
    get password() { return this._password; }
    get hostname() { return this._hostname; }
    set hostname(v) { this._hostname = String(v).toLowerCase(); }
    get port() { return this._port; }
    set port(v) { const p = String(v); this._port = p === DEFAULT_PORTS[this._protocol] ? "" : p; }
    get host() { return this._hostname + (this._port ? ":" + this._port : ""); }
    get origin() { return this._protocol in DEFAULT_PORTS ? this._protocol + "//" + this.host : "null"; }
    get pathname() { return this._pathname; }
    set pathname(v) { this._pathname = escapePath(normalizePath(String(v))); }
    get search() { return this._search; }
    set search(v) { const s = String(v); this._search = s === "" || s === "?" ? "" : s.charAt(0) === "?" ? s : "?" + s; this._params._parse(this._search); }
    get searchParams() { return this._params; }
    get hash() { return this._hash; }
    set hash(v) { const s = String(v); this._hash = s === "" || s === "#" ? "" : s.charAt(0) === "#" ? s : "#" + s; }
    get href() {
      const auth = this._username ? this._username + (this._password ? ":" + this._password : "") + "@" : "";
      const authority = this._hostname !== "" || this._protocol in DEFAULT_PORTS ? "//" + auth + this.host : "";
      return this._protocol + authority + this._pathname + this._search + this._hash;
    }
    toString() { return this.href; }
    toJSON() { return this.href; }
    static canParse(u, b) { try { new URL(u, b); return true; } catch (_) { return false; } }
  }
  define("URL", URL);

  // --- Headers, Request, Response, fetch -----------------------------------------------------
  class Headers {
    constructor(init) {
      this._map = new Map();
      if (init === undefined || init === null) return;
      if (init instanceof Headers) init.forEach((v, k) => this.append(k, v));
      else if (typeof init[Symbol.iterator] === "function") for (const p of init) this.append(p[0], p[1]);
      else for (const k of Object.keys(init)) this.append(k, init[k]);
    }
    _name(k) {
      const n = String(k).toLowerCase();
      if (!/^[!#$%&'*+.^_\x60|~0-9a-z-]+$/.test(n)) throw new TypeError("Invalid header name: " + n.slice(0, 100));
      return n;
    }
    append(k, v) { const n = this._name(k); const s = String(v).trim(); const old = this._map.get(n); this._map.set(n, old === undefined ? s : old + ", " + s); }
    set(k, v) { this._map.set(this._name(k), String(v).trim()); }
    get(k) { const v = this._map.get(String(k).toLowerCase()); return v === undefined ? null : v; }
    has(k) { return this._map.has(String(k).toLowerCase()); }
    delete(k) { this._map.delete(String(k).toLowerCase()); }
    forEach(fn, self) { for (const k of [...this._map.keys()].sort()) fn.call(self, this._map.get(k), k, this); }
    keys() { return [...this._map.keys()].sort()[Symbol.iterator](); }
    values() { return [...this._map.keys()].sort().map((k) => this._map.get(k))[Symbol.iterator](); }
    entries() { return [...this._map.keys()].sort().map((k) => [k, this._map.get(k)])[Symbol.iterator](); }
    [Symbol.iterator]() { return this.entries(); }
    _object() { const o = {}; for (const [k, v] of this._map) o[k] = v; return o; }
  }
  define("Headers", Headers);

  /**
   * A body as stored by Request/Response: its text or its bytes, or neither (null); plus a default
   * content type. A string stays a string until bytes are asked for: text(), json() and fetch's
   * request body read it as is, with no encoding and decoding loop in the interpreter (a fetched
   * JSON document cost operations in proportion to its length twice). Lone surrogates become
   * U+FFFD at once (natively), as the UTF-8 round trip on the web makes them.
   */
  function extractBody(body) {
    if (body === undefined || body === null) return { text: null, bytes: null, type: null };
    if (typeof body === "string") return stringBody(body, "text/plain;charset=UTF-8");
    if (body instanceof URLSearchParams) return stringBody(body.toString(), "application/x-www-form-urlencoded;charset=UTF-8");
    if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) return { text: null, bytes: toBytes(body).slice(), type: null };
    return stringBody(String(body), "text/plain;charset=UTF-8");
  }
  // Taken now: a script replacing the prototype's method later changes nothing here.
  const toWellFormed = String.prototype.toWellFormed;
  function stringBody(s, type) {
    return { text: toWellFormed.call(s), bytes: null, type };
  }
  function bodyBytes(o) {
    if (o._bytes === null && o._text !== null) o._bytes = utf8Encode(o._text);
    return o._bytes === null ? new Uint8Array(0) : o._bytes;
  }
  function bodyText(o) {
    return o._text !== null ? o._text : o._bytes === null ? "" : utf8Decode(o._bytes);
  }
  const bodyMixin = {
    get bodyUsed() { return this._used; },
    _take() {
      if (this._used) return Promise.reject(new TypeError("Body has already been consumed"));
      this._used = true;
      return Promise.resolve(this);
    },
    arrayBuffer() { return this._take().then((o) => bodyBytes(o).slice().buffer); },
    bytes() { return this._take().then((o) => bodyBytes(o).slice()); },
    text() { return this._take().then(bodyText); },
    json() { return this.text().then((t) => JSON.parse(t)); },
  };
  function withBody(cls) {
    for (const k of Object.getOwnPropertyNames(bodyMixin))
      Object.defineProperty(cls.prototype, k, Object.getOwnPropertyDescriptor(bodyMixin, k));
    return cls;
  }
  const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
  class Request {
    constructor(input, init) {
      init = init || {};
      const from = input instanceof Request ? input : null;
      this.url = from ? from.url : new URL(String(input)).href;
      const m = String(init.method !== undefined ? init.method : from ? from.method : "GET").toUpperCase();
      if (!METHODS.includes(m)) throw new TypeError("Unsupported method: " + m.slice(0, 20));
      this.method = m;
      this.headers = new Headers(init.headers !== undefined ? init.headers : from ? from.headers : undefined);
      const b = init.body !== undefined ? extractBody(init.body) : { text: from ? from._text : null, bytes: from ? from._bytes : null, type: null };
      if ((b.bytes !== null || b.text !== null) && (m === "GET" || m === "HEAD")) throw new TypeError("Request with GET/HEAD method cannot have body");
      if (b.type && !this.headers.has("content-type")) this.headers.set("content-type", b.type);
      this._text = b.text;
      this._bytes = b.bytes;
      this._used = false;
      this.redirect = init.redirect || "follow";
      this.signal = init.signal || null;
    }
    clone() { return new Request(this); }
  }
  withBody(Request);
  define("Request", Request);

  class Response {
    constructor(body, init) {
      init = init || {};
      const status = init.status === undefined ? 200 : Number(init.status);
      if (!Number.isInteger(status) || status < 200 || status > 599) throw new RangeError("Response status must be 200 to 599");
      this.status = status;
      this.statusText = init.statusText === undefined ? "" : String(init.statusText);
      this.headers = new Headers(init.headers);
      const b = extractBody(body);
      if (b.type && !this.headers.has("content-type")) this.headers.set("content-type", b.type);
      this._text = b.text;
      this._bytes = b.bytes;
      this._used = false;
      this.url = "";
      this.redirected = false;
      this.type = "default";
    }
    get ok() { return this.status >= 200 && this.status < 300; }
    clone() { const r = new Response(null, this); r._text = this._text; r._bytes = this._bytes; r.url = this.url; return r; }
    static json(data, init) {
      const r = new Response(JSON.stringify(data), init);
      r.headers.set("content-type", "application/json");
      return r;
    }
    static error() { const r = new Response(null, { status: 200 }); r.status = 0; r.type = "error"; return r; }
    static redirect(url, status) { return new Response(null, { status: status || 302, headers: { location: new URL(url).href } }); }
  }
  withBody(Response);
  define("Response", Response);

  define("fetch", function fetch(input, init) {
    let req;
    try { req = new Request(input, init); } catch (err) { return Promise.reject(err); }
    if (req.redirect !== "follow") return Promise.reject(new TypeError("fetch: only redirect \"follow\" is supported"));
    const o = init && typeof init === "object" ? init : {};
    const opts = { headers: req.headers._object() };
    // Non-standard but handy: the SDK's own caps, e.g. fetch(url, {timeout_ms: 2000}).
    if (o.timeout_ms !== undefined) opts.timeout_ms = o.timeout_ms;
    if (o.max_bytes !== undefined) opts.max_bytes = o.max_bytes;
    const body = req._text !== null ? req._text : req._bytes === null ? null : utf8Decode(req._bytes);
    return host.call("http.request", [req.method, req.url, body, opts]).then((r) => {
      const res = new Response(r.status >= 200 && r.status <= 599 && r.status !== 204 && r.status !== 304 && req.method !== "HEAD" ? r.body_raw : null, { status: r.status >= 200 ? r.status : 200, headers: r.headers });
      if (r.status < 200) res.status = r.status;
      res.url = req.url;
      return res;
    }, (err) => { throw new TypeError("fetch failed: " + (err && err.message ? err.message : String(err))); });
  });

  // --- crypto --------------------------------------------------------------------------------
  const cryptoObj = typeof G.crypto === "object" && G.crypto ? G.crypto : {};
  if (typeof cryptoObj.getRandomValues !== "function")
    cryptoObj.getRandomValues = function getRandomValues(arr) {
      if (!ArrayBuffer.isView(arr) || arr instanceof Float32Array || arr instanceof Float64Array) throw new TypeError("getRandomValues needs an integer typed array");
      if (arr.byteLength > 65536) throw new RangeError("QuotaExceededError: at most 65536 bytes");
      new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength).set(host.randomBytes(arr.byteLength));
      return arr;
    };
  if (typeof cryptoObj.randomUUID !== "function")
    cryptoObj.randomUUID = function randomUUID() {
      const b = host.randomBytes(16);
      b[6] = (b[6] & 0x0f) | 0x40;
      b[8] = (b[8] & 0x3f) | 0x80;
      let h = "";
      for (let i = 0; i < 16; i++) h += (b[i] + 0x100).toString(16).slice(1);
      return h.slice(0, 8) + "-" + h.slice(8, 12) + "-" + h.slice(12, 16) + "-" + h.slice(16, 20) + "-" + h.slice(20);
    };
  define("crypto", cryptoObj);

  // --- structuredClone -----------------------------------------------------------------------
  define("structuredClone", function structuredClone(value) {
    const seen = new Map();
    const clone = (v) => {
      if (v === null || typeof v !== "object") {
        if (typeof v === "function" || typeof v === "symbol") throw new Error("DataCloneError: " + typeof v + " could not be cloned");
        return v;
      }
      if (seen.has(v)) return seen.get(v);
      let out;
      if (Array.isArray(v)) { out = []; seen.set(v, out); for (let i = 0; i < v.length; i++) out[i] = clone(v[i]); return out; }
      if (v instanceof Date) return new Date(v.getTime());
      if (v instanceof RegExp) return new RegExp(v.source, v.flags);
      if (v instanceof ArrayBuffer) return v.slice(0);
      if (ArrayBuffer.isView(v)) return new v.constructor(v);
      if (v instanceof Map) { out = new Map(); seen.set(v, out); for (const [k, x] of v) out.set(clone(k), clone(x)); return out; }
      if (v instanceof Set) { out = new Set(); seen.set(v, out); for (const x of v) out.add(clone(x)); return out; }
      if (v instanceof Error) { out = new Error(v.message); out.name = v.name; return out; }
      if (v instanceof Promise || v instanceof WeakMap || v instanceof WeakSet) throw new Error("DataCloneError: the object could not be cloned");
      out = {};
      seen.set(v, out);
      for (const k of Object.keys(v)) out[k] = clone(v[k]);
      return out;
    };
    return clone(value);
  });

  // --- timers --------------------------------------------------------------------------------
  define("queueMicrotask", function queueMicrotask(fn) { Promise.resolve().then(() => fn()); });
  let nextTimer = 1;
  const timers = new Map();
  const wait = (ms) => host.call("timer.sleep", [Math.max(0, Number(ms) || 0)]);
  define("setTimeout", function setTimeout(fn, ms, ...args) {
    if (typeof fn !== "function") throw new TypeError("setTimeout needs a function");
    const id = nextTimer++;
    timers.set(id, true);
    wait(ms).then(() => { if (timers.delete(id)) fn(...args); });
    return id;
  });
  define("clearTimeout", function clearTimeout(id) { timers.delete(id); });
  define("setInterval", function setInterval(fn, ms, ...args) {
    if (typeof fn !== "function") throw new TypeError("setInterval needs a function");
    const id = nextTimer++;
    timers.set(id, true);
    const every = Math.max(1, Number(ms) || 0);
    const tick = () => wait(every).then(() => { if (timers.has(id)) { fn(...args); tick(); } });
    tick();
    return id;
  });
  define("clearInterval", function clearInterval(id) { timers.delete(id); });
})`;
