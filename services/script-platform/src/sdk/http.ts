import type { LookupAddress } from "node:dns";
import { lookup as dnsLookup } from "node:dns";
import ipaddr from "ipaddr.js";
import { Agent, request } from "undici";
import { ScriptVisibleError } from "../sandbox/engine.js";
import { fail, isPlainObject, options } from "./args.js";

/**
 * Outbound HTTP for scripts (seed "Outbound HTTP safety"):
 * - schemes http and https only; ports 80, 443 and any port from 1024 up (the well-known ports
 *   below 1024 other than web ports reach mail, SSH, databases' admin ports and the like);
 * - literal IP hosts are checked when the URL is parsed; names are resolved by our own lookup,
 *   which checks EVERY address the resolver returns against the deny-list before connecting, so a
 *   name that also resolves to a private address is refused (and the connection can only go to an
 *   address that was checked, which defeats DNS rebinding between check and connect);
 * - redirects are followed by hand, each hop re-checked, at most 5;
 * - timeouts (`timeout_ms`, default 10 s, at most 60 s) and a response size cap (`max_bytes`,
 *   default 1 MiB, at most 10 MiB);
 * - errors name a category (`blocked_address`, `scheme_not_allowed`, ...), never the address.
 * Allowed addresses are exactly ipaddr.js's "unicast" range (IPv4-mapped IPv6 judged as IPv4): so
 * private, loopback, link-local (incl. 169.254.169.254 metadata), unique-local, CGNAT, multicast,
 * unspecified, broadcast, reserved, benchmarking, 6to4/Teredo/NAT64 are all refused.
 * PLATFORM_HTTP_ALLOW_PRIVATE lifts only the address check.
 */
export const HTTP_DEFAULT_TIMEOUT_MS = 10_000;
export const HTTP_MAX_TIMEOUT_MS = 60_000;
export const HTTP_DEFAULT_MAX_BYTES = 1024 * 1024;
export const HTTP_MAX_MAX_BYTES = 10 * 1024 * 1024;
export const HTTP_MAX_REDIRECTS = 5;
const FORBIDDEN_HEADERS = new Set([
  "host",
  "connection",
  "content-length",
  "transfer-encoding",
  "upgrade",
  "keep-alive",
  "te",
  "trailer",
]);

export type HttpErrorCategory =
  | "invalid_url"
  | "scheme_not_allowed"
  | "port_not_allowed"
  | "blocked_address"
  | "dns_failure"
  | "connection_failed"
  | "timeout"
  | "response_too_large"
  | "too_many_redirects";

export class HttpRequestError extends ScriptVisibleError {
  constructor(readonly category: HttpErrorCategory) {
    super(`http: request failed (${category})`);
  }
}

/** Whether an address (v4 or v6 text) may be contacted. */
export function isAllowedAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const a = ipaddr.process(address);
  // IPv4-compatible IPv6 (::/96, deprecated by RFC 4291, e.g. [::7f00:1] = 127.0.0.1) carries an
  // IPv4 address that ipaddr.js still calls unicast: refuse the whole block.
  if (a.kind() === "ipv6" && (a as ipaddr.IPv6).parts.slice(0, 6).every((p) => p === 0)) return false;
  return a.range() === "unicast";
}

export type Resolver = (hostname: string) => Promise<LookupAddress[]>;
const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addrs) => (err ? reject(err) : resolve(addrs))),
  );

class BlockedLookup extends Error {
  readonly code = "E_BLOCKED_ADDRESS";
}
class FailedLookup extends Error {
  readonly code = "E_DNS_FAILURE";
}

export interface OutboundHttpOptions {
  allowPrivate: boolean;
  resolver?: Resolver;
}

export interface HttpResult {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  body_raw: string;
}

/** Parse and check a URL before any connection: scheme, port, literal IP. */
export function checkUrl(raw: unknown, allowPrivate: boolean): URL {
  if (typeof raw !== "string" || raw.length === 0 || raw.length > 8192)
    throw new HttpRequestError("invalid_url");
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new HttpRequestError("invalid_url");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new HttpRequestError("scheme_not_allowed");
  if (url.username || url.password) throw new HttpRequestError("invalid_url");
  const port = url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
  if (!(port === 80 || port === 443 || port >= 1024)) throw new HttpRequestError("port_not_allowed");
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (ipaddr.isValid(host) && !allowPrivate && !isAllowedAddress(host))
    throw new HttpRequestError("blocked_address");
  return url;
}

function encodeBody(body: unknown): { data: string | Buffer | null; type: string | null } {
  if (body === undefined || body === null) return { data: null, type: null };
  if (typeof body === "string") return { data: body, type: "text/plain; charset=utf-8" };
  if (body instanceof Uint8Array) return { data: Buffer.from(body), type: "application/octet-stream" };
  return { data: JSON.stringify(body), type: "application/json" };
}

/**
 * Connections to one origin open at once, over all runs of this process: parked runs interleave,
 * so many runs of one app wait on one upstream together (beyond it a request waits for a socket).
 */
export const HTTP_CONNECTIONS_PER_ORIGIN = 256;

export function createOutboundHttp(opts: OutboundHttpOptions) {
  const resolver = opts.resolver ?? systemResolver;
  const lookup = (
    hostname: string,
    lookupOpts: { all?: boolean },
    cb: (err: Error | null, address?: string | LookupAddress[], family?: number) => void,
  ) => {
    resolver(hostname).then(
      (addrs) => {
        if (addrs.length === 0) return cb(new FailedLookup("no address"));
        if (!opts.allowPrivate && addrs.some((a) => !isAllowedAddress(a.address)))
          return cb(new BlockedLookup("blocked"));
        if (lookupOpts?.all) return cb(null, addrs);
        const first = addrs[0] as LookupAddress;
        cb(null, first.address, first.family);
      },
      () => cb(new FailedLookup("lookup failed")),
    );
  };
  const agent = new Agent({
    connect: { lookup: lookup as never, timeout: HTTP_DEFAULT_TIMEOUT_MS },
    connections: HTTP_CONNECTIONS_PER_ORIGIN,
  });

  const categorize = (err: unknown, timedOut: boolean): HttpRequestError => {
    if (err instanceof HttpRequestError) return err;
    if (timedOut) return new HttpRequestError("timeout");
    for (let e: unknown = err, i = 0; e && i < 5; e = (e as { cause?: unknown }).cause, i++) {
      const code = (e as { code?: string }).code;
      if (code === "E_BLOCKED_ADDRESS") return new HttpRequestError("blocked_address");
      if (code === "E_DNS_FAILURE" || code === "ENOTFOUND" || code === "EAI_AGAIN")
        return new HttpRequestError("dns_failure");
      if (
        code === "UND_ERR_CONNECT_TIMEOUT" ||
        code === "UND_ERR_HEADERS_TIMEOUT" ||
        code === "UND_ERR_BODY_TIMEOUT"
      )
        return new HttpRequestError("timeout");
    }
    return new HttpRequestError("connection_failed");
  };

  return {
    allowPrivate: opts.allowPrivate,
    async request(
      method: string,
      rawUrl: unknown,
      body: unknown,
      rawOpts: unknown,
      signal: AbortSignal,
    ): Promise<HttpResult> {
      const call = `http.${method.toLowerCase()}`;
      const o = options(call, rawOpts, ["headers", "timeout_ms", "max_bytes"] as const);
      const headers: Record<string, string> = {};
      if (o.headers !== undefined && o.headers !== null) {
        if (!isPlainObject(o.headers)) fail(call, "headers must be an object of strings");
        for (const [k, v] of Object.entries(o.headers)) {
          if (typeof v !== "string") fail(call, `header ${k} must be a string`);
          if (FORBIDDEN_HEADERS.has(k.toLowerCase())) fail(call, `header ${k} may not be set`);
          headers[k.toLowerCase()] = v;
        }
      }
      const num = (v: unknown, field: string, def: number, max: number) => {
        if (v === undefined || v === null) return def;
        if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > max)
          fail(call, `${field} must be an integer from 1 to ${max}`);
        return v;
      };
      const timeoutMs = num(o.timeout_ms, "timeout_ms", HTTP_DEFAULT_TIMEOUT_MS, HTTP_MAX_TIMEOUT_MS);
      const maxBytes = num(o.max_bytes, "max_bytes", HTTP_DEFAULT_MAX_BYTES, HTTP_MAX_MAX_BYTES);
      if ((method === "GET" || method === "HEAD") && body !== null && body !== undefined)
        fail(call, `${method} requests cannot carry a body`);
      if (!["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"].includes(method))
        fail(call, "unsupported method");
      let url = checkUrl(rawUrl, opts.allowPrivate);
      let m = method;
      let payload = encodeBody(body);
      // One controller and timer per request, cleared when it ends: AbortSignal.timeout and
      // AbortSignal.any keep a timer and weak links per call alive until the timeout, which
      // many parked runs' requests at once turned into garbage-collector work.
      const ac = new AbortController();
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        ac.abort(new HttpRequestError("timeout"));
      }, timeoutMs);
      const onRunEnd = () => ac.abort(signal.reason);
      if (signal.aborted) onRunEnd();
      else signal.addEventListener("abort", onRunEnd, { once: true });
      const both = ac.signal;
      try {
        for (let hop = 0; ; hop++) {
          const h = { ...headers };
          if (payload.data !== null && payload.type && !h["content-type"]) h["content-type"] = payload.type;
          let res: Awaited<ReturnType<typeof request>>;
          try {
            res = await request(url, {
              method: m as "GET",
              headers: h,
              body: payload.data,
              dispatcher: agent,
              signal: both,
              headersTimeout: timeoutMs,
              bodyTimeout: timeoutMs,
            });
          } catch (err) {
            throw categorize(err, timedOut);
          }
          const location = res.headers.location;
          if ([301, 302, 303, 307, 308].includes(res.statusCode) && typeof location === "string") {
            res.body.resume();
            if (hop >= HTTP_MAX_REDIRECTS) throw new HttpRequestError("too_many_redirects");
            let next: string;
            try {
              next = new URL(location, url).toString();
            } catch {
              throw new HttpRequestError("invalid_url");
            }
            url = checkUrl(next, opts.allowPrivate);
            if (
              res.statusCode === 303 ||
              ((res.statusCode === 301 || res.statusCode === 302) && m === "POST")
            ) {
              m = m === "HEAD" ? "HEAD" : "GET";
              payload = { data: null, type: null };
            }
            continue;
          }
          const chunks: Buffer[] = [];
          let size = 0;
          try {
            for await (const chunk of res.body) {
              size += (chunk as Buffer).length;
              if (size > maxBytes) {
                res.body.destroy();
                throw new HttpRequestError("response_too_large");
              }
              chunks.push(chunk as Buffer);
            }
          } catch (err) {
            throw categorize(err, timedOut);
          }
          const raw = Buffer.concat(chunks).toString("utf8");
          const outHeaders: Record<string, string> = {};
          for (const [k, v] of Object.entries(res.headers)) {
            if (v === undefined) continue;
            outHeaders[k] = Array.isArray(v) ? v.join(", ") : String(v);
          }
          let parsed: unknown = raw;
          if (/\bjson\b/i.test(outHeaders["content-type"] ?? "") && raw.length > 0) {
            try {
              parsed = JSON.parse(raw);
            } catch {
              parsed = raw;
            }
          }
          return {
            status: res.statusCode,
            headers: outHeaders,
            body: method === "HEAD" ? null : parsed,
            body_raw: raw,
          };
        }
      } finally {
        clearTimeout(timer);
        signal.removeEventListener("abort", onRunEnd);
      }
    },
    close: () => agent.close(),
  };
}
export type OutboundHttp = ReturnType<typeof createOutboundHttp>;
