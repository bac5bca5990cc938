import { AppError } from "@app/kit/errors";

/**
 * Route patterns: parsing and validation, request matching, precedence and conflicts (seed,
 * "Route precedence at request time"). Pure functions; the route table and the routes domain
 * module build on them.
 */
export type HostKind = "any" | "strict" | "wildcard";
export type PathKind = "exact" | "prefix" | "param";
export type DispatchMode = "sync" | "async";

export const HOST_KINDS: readonly HostKind[] = ["any", "strict", "wildcard"];
export const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "ANY"] as const;
export type RouteMethod = (typeof METHODS)[number];

/** The route fields that decide matching. */
export interface RoutePattern {
  host_kind: HostKind;
  /** null for any; the host for strict; `*.example.com` for wildcard. */
  host: string | null;
  path_kind: PathKind;
  /** Stored form: prefix routes end with `/` (`/greet/*` → `/greet/`). */
  path: string;
  method: string;
}

type Segment = { lit: string } | { param: string };

export interface CompiledPattern extends RoutePattern {
  segments: Segment[];
  /** Literal segments before the first parameter (all segments for exact and prefix). */
  leadingLiterals: number;
}

const invalid = (message: string, extra: Record<string, unknown> = {}) =>
  new AppError(422, "invalid_route", message, extra);

const RESERVED = ["/api", "/admin", "/healthz", "/version", "/readyz", "/metrics"];
const SEGMENT_RE = /^[A-Za-z0-9._~!$&'()+,;=@%:-]+$/;
const PARAM_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
const LABEL_RE = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** Lowercase host without port or trailing dot; IPv6 without brackets. */
export function normalizeHost(raw: string): string {
  let h = raw.trim().toLowerCase();
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    return end > 0 ? h.slice(1, end) : h;
  }
  const colon = h.indexOf(":");
  // One colon: host:port. More: a bare IPv6 address.
  if (colon >= 0 && h.indexOf(":", colon + 1) < 0) h = h.slice(0, colon);
  return h.endsWith(".") ? h.slice(0, -1) : h;
}

/** A concrete host name (or IP literal) as claims and strict routes use it; null if invalid. */
export function validHostName(host: string): boolean {
  if (host.length === 0 || host.length > 253) return false;
  if (/^[0-9a-f:]+$/.test(host) && host.includes(":")) return true; // IPv6 literal
  return host.split(".").every((l) => LABEL_RE.test(l));
}

/** `*.example.com` → `example.com`, or null when not a valid wildcard (needs two labels after `*.`). */
export function wildcardSuffix(host: string): string | null {
  if (!host.startsWith("*.")) return null;
  const suffix = host.slice(2);
  if (!validHostName(suffix) || !suffix.includes(".") || suffix.includes(":")) return null;
  return suffix;
}

/** Whether `host` (normalised) falls under a wildcard suffix: any depth of subdomain, never the bare suffix. */
export function matchesWildcard(host: string, suffix: string): boolean {
  return host.length > suffix.length + 1 && host.endsWith(`.${suffix}`);
}

export function isReservedPath(path: string): boolean {
  const p = path.toLowerCase();
  return RESERVED.some((r) => p === r || p.startsWith(`${r}/`));
}

/** Parse a path as written (`/greet`, `/greet/*`, `/users/:id`) into its kind and stored form. */
export function parsePath(input: string): { path_kind: PathKind; path: string; segments: Segment[] } {
  if (typeof input !== "string" || !input.startsWith("/"))
    throw invalid("A route path must start with /.", { field: "path" });
  if (input.length > 1024) throw invalid("A route path may be at most 1024 characters.", { field: "path" });
  if (/[?#\s]/.test(input) || /[\u0000-\u001f\u007f]/.test(input))
    throw invalid("A route path may not contain a query, a fragment, spaces or control characters.", {
      field: "path",
    });
  const prefix = input.endsWith("/*");
  const base = prefix ? input.slice(0, -1) : input; // prefix keeps its trailing slash
  if (!prefix && base.length > 1 && base.endsWith("/"))
    throw invalid("A route path may not end with /; use /path/* for a prefix route.", { field: "path" });
  const raw = base === "/" ? [] : base.replace(/^\/|\/$/g, "").split("/");
  const segments: Segment[] = [];
  const names = new Set<string>();
  for (const seg of raw) {
    if (seg === "") throw invalid("A route path may not contain an empty segment (//).", { field: "path" });
    if (seg.includes("*"))
      throw invalid("* may only end a prefix route, as /path/*.", { field: "path", segment: seg });
    if (seg.startsWith(":")) {
      const name = seg.slice(1);
      if (!PARAM_RE.test(name))
        throw invalid(`Parameter segment ${seg} needs a name of letters, digits and _.`, { field: "path" });
      if (names.has(name)) throw invalid(`Parameter :${name} appears twice.`, { field: "path" });
      if (prefix) throw invalid("A prefix route may not contain parameters.", { field: "path" });
      names.add(name);
      segments.push({ param: name });
    } else {
      if (!SEGMENT_RE.test(seg))
        throw invalid(`Path segment ${JSON.stringify(seg)} has characters a route may not use.`, {
          field: "path",
        });
      segments.push({ lit: seg });
    }
  }
  if (isReservedPath(base) || (prefix && isReservedPath(base.slice(0, -1))))
    throw new AppError(
      422,
      "reserved_path",
      "Route paths may not use the reserved prefixes /api/, /admin/, /healthz, /version, /readyz and /metrics.",
      { field: "path" },
    );
  const path_kind: PathKind = prefix ? "prefix" : names.size > 0 ? "param" : "exact";
  return { path_kind, path: base, segments };
}

/** Split a stored pattern back into segments (for rows read from the database). */
export function compile(p: RoutePattern): CompiledPattern {
  const raw = p.path === "/" ? [] : p.path.replace(/^\/|\/$/g, "").split("/");
  const segments: Segment[] = raw.map((s) =>
    s.startsWith(":") && p.path_kind === "param" ? { param: s.slice(1) } : { lit: s },
  );
  const firstParam = segments.findIndex((s) => "param" in s);
  return { ...p, segments, leadingLiterals: firstParam < 0 ? segments.length : firstParam };
}

/** Normalise and validate host_kind/host. */
export function parseHost(hostKind: HostKind, host: string | null | undefined): string | null {
  if (hostKind === "any") {
    if (host) throw invalid("host must be absent when host_kind is any.", { field: "host" });
    return null;
  }
  if (!host) throw invalid(`host is required when host_kind is ${hostKind}.`, { field: "host" });
  const h = host.trim().toLowerCase().replace(/\.$/, "");
  if (hostKind === "wildcard") {
    if (!wildcardSuffix(h)) throw invalid("A wildcard host looks like *.example.com.", { field: "host" });
    return h;
  }
  const n = normalizeHost(h);
  if (n !== h || !validHostName(n))
    throw invalid("host must be a plain host name without port.", { field: "host" });
  return n;
}

export function parseMethod(method: string | undefined): RouteMethod {
  const m = (method ?? "ANY").toUpperCase();
  if (!(METHODS as readonly string[]).includes(m))
    throw invalid(`method must be one of ${METHODS.join(", ")}.`, { field: "method" });
  return m as RouteMethod;
}

const sameBucket = (a: RoutePattern, b: RoutePattern) =>
  a.host_kind === b.host_kind && (a.host ?? "") === (b.host ?? "");
const methodsOverlap = (a: string, b: string) => a === b || a === "ANY" || b === "ANY";

/**
 * Seed: "Two routes of the same kind that could match the same request conflict: exact and
 * prefix conflict on equal literals; param routes conflict when segment counts are equal and
 * literals agree wherever both are literal." Routes in different host buckets, or with methods
 * that cannot both match one request, never conflict (precedence decides between buckets).
 */
export function conflicts(a: CompiledPattern, b: CompiledPattern): boolean {
  if (!sameBucket(a, b) || !methodsOverlap(a.method, b.method) || a.path_kind !== b.path_kind) return false;
  if (a.path_kind !== "param") return a.path === b.path;
  if (a.segments.length !== b.segments.length) return false;
  return a.segments.every((s, i) => {
    const t = b.segments[i];
    return !("lit" in s) || !t || !("lit" in t) || s.lit === t.lit;
  });
}

export function methodMatches(routeMethod: string, method: string): boolean {
  return routeMethod === "ANY" || routeMethod === method || (method === "HEAD" && routeMethod === "GET");
}

/** The segments of a request path (no query string), as matchPath compares them. */
export function splitPath(path: string): string[] {
  return path === "/" ? [] : path.slice(1).split("/");
}

/** Match a request path (no query string) against one pattern's path; `split` is splitPath(path) when the caller has it. */
export function matchPath(
  p: CompiledPattern,
  path: string,
  split?: readonly string[],
): { params: Record<string, string>; rest: string } | null {
  if (p.path_kind === "exact") return path === p.path ? { params: {}, rest: "" } : null;
  if (p.path_kind === "prefix")
    return path.startsWith(p.path) ? { params: {}, rest: path.slice(p.path.length) } : null;
  const parts = split ?? splitPath(path);
  if (parts.length !== p.segments.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    const seg = p.segments[i] as Segment;
    const part = parts[i] as string;
    if ("lit" in seg) {
      if (seg.lit !== part) return null;
    } else {
      if (part === "") return null;
      try {
        params[seg.param] = decodeURIComponent(part);
      } catch {
        return null;
      }
    }
  }
  return { params, rest: "" };
}

/**
 * Order of the non-exact routes inside one host bucket: more leading literal segments first,
 * then param before prefix, then the longer prefix. The first that matches wins.
 */
export function precedenceCompare(a: CompiledPattern, b: CompiledPattern): number {
  if (a.leadingLiterals !== b.leadingLiterals) return b.leadingLiterals - a.leadingLiterals;
  if (a.path_kind !== b.path_kind) return a.path_kind === "param" ? -1 : 1;
  return b.path.length - a.path.length;
}
