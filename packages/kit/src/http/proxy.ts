import type { FastifyRequest } from "fastify";
import proxyAddr from "proxy-addr";
import { z } from "zod";
import { envVar } from "../config.js";

/**
 * Running behind a reverse proxy (the common contract, "Running and operating"). `TRUST_PROXY`
 * says which peers' X-Forwarded-For/-Proto/-Host are believed: unset or `false` (none: the socket
 * is the client, the Host header the host), a hop count, or a comma list of addresses/CIDRs (and
 * proxy-addr's names `loopback`, `linklocal`, `uniquelocal`). Fastify's own `trustProxy` applies
 * it, so `req.ip`, `req.protocol` and `req.host` are the values every service reads through the
 * helpers below; nothing else reads forwarded headers.
 */
export type TrustProxy = false | number | string[];

const RULE = "must be false, a hop count, or a comma list of addresses/CIDRs";

export const trustProxySchema = z
  .string()
  .optional()
  .transform((raw, ctx): TrustProxy => {
    const v = (raw ?? "").trim();
    if (v === "" || v === "false") return false;
    if (/^\d+$/.test(v)) {
      const hops = Number(v);
      if (hops <= 1000) return hops;
    } else {
      const list = v
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
      try {
        proxyAddr.compile(list);
        if (list.length > 0) return list;
      } catch {
        // The message names the bad entry; the rule below does not repeat it.
      }
    }
    ctx.addIssue({ code: "custom", message: RULE });
    return z.NEVER;
  });

/** Every service's `TRUST_PROXY` and `BASE_PATH` entries (spread into its env spec). */
export function proxyEnv() {
  return {
    TRUST_PROXY: envVar(
      trustProxySchema,
      "which reverse proxies' X-Forwarded-For/-Proto/-Host to believe: false, a hop count (1 = the proxy in front), or a comma list of addresses/CIDRs",
      { defaultText: "false (forwarded headers ignored)" },
    ),
    BASE_PATH: envVar(
      z
        .string()
        .optional()
        .refine((v) => v === undefined || v === "/", {
          message: "not supported: serve each service at the root of its own host name (docs/deploy.md)",
        }),
      "not supported: leave unset and serve each service at the root of its own host name",
    ),
  };
}

/**
 * Fastify's `trustProxy` option for the setting: a list goes to proxy-addr as it is; a hop count
 * becomes the function form Fastify uses for numbers itself (its option type omits numbers).
 */
export function fastifyTrustProxy(
  t: TrustProxy,
): false | string[] | ((address: string, hop: number) => boolean) {
  if (typeof t !== "number") return t;
  return (_address, hop) => hop < t;
}

/** What the helpers read of a request (a FastifyRequest has it). */
export type ProxiedRequest = Pick<FastifyRequest, "ip" | "protocol" | "host">;

/** The client's address: the socket peer, or the first untrusted hop of X-Forwarded-For. */
export const clientAddress = (req: ProxiedRequest): string => req.ip;

/** Whether the client reached us over TLS (directly, or at a trusted proxy that says so). */
export const isHttps = (req: ProxiedRequest): boolean => req.protocol === "https";

/**
 * `https://host[:port]` as the client addressed us, from a trusted proxy's X-Forwarded-Proto and
 * -Host, else the socket and the Host header.
 */
export const requestOrigin = (req: ProxiedRequest): string =>
  `${isHttps(req) ? "https" : "http"}://${req.host}`;

/** A configured public URL (without a trailing slash) wins; else the request's own origin. */
export const publicOrigin = (req: ProxiedRequest, configured: string | undefined | null): string =>
  configured ? configured.replace(/\/+$/, "") : requestOrigin(req);
