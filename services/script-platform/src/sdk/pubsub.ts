import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { Database } from "@app/kit/db";
import type { SecretBox } from "../crypto/secret-box.js";
import type { PlatformDB } from "../db/schema.js";
import { defineOwn, fail, name, options } from "./args.js";
import { insertSigningKeyIfAbsent, signingKeyOf } from "./pubsub-repository.js";
import type { SdkCall, SdkDeps } from "./types.js";

/** Subscriber token lifetime: default and clamps (seconds). */
export const TOKEN_TTL_DEFAULT_S = 3600;
export const TOKEN_TTL_MIN_S = 60;
export const TOKEN_TTL_MAX_S = 7 * 24 * 3600;

/** Message → JSON-safe value: bytes become base64 strings at any depth. */
export function jsonSafe(v: unknown): unknown {
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64");
  if (Array.isArray(v)) return v.map(jsonSafe);
  if (v !== null && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) defineOwn(out, k, jsonSafe(x));
    return out;
  }
  return v === undefined ? null : v;
}

const keyAad = (appId: string) => `signing-key:${appId}`;

/** The app's HMAC key for subscriber tokens: created on first use, stored sealed. */
export async function appSigningKey(
  database: Database<PlatformDB>,
  box: SecretBox,
  appId: string,
  now: string,
): Promise<Buffer> {
  let sealed = await signingKeyOf(database, appId);
  if (sealed === null) {
    await insertSigningKeyIfAbsent(database, {
      appId,
      keyEnc: box.seal(randomBytes(32), keyAad(appId)),
      now,
    });
    sealed = await signingKeyOf(database, appId);
  }
  if (sealed === null) throw new Error("signing key vanished");
  return box.open(sealed, keyAad(appId));
}

const sign = (key: Buffer, payload: string) => createHmac("sha256", key).update(payload).digest("base64url");

/** `<base64url {a: app, t: topic, e: expiry epoch s}>.<base64url HMAC-SHA256>` */
export function mintSubscriberToken(key: Buffer, appId: string, topic: string, expiresAtS: number): string {
  const payload = Buffer.from(JSON.stringify({ a: appId, t: topic, e: expiresAtS })).toString("base64url");
  return `${payload}.${sign(key, payload)}`;
}

/**
 * For the realtime endpoint: whether `token` was issued for this app and topic and is unexpired.
 * Compares the MAC in constant time; never throws on malformed input.
 */
export async function verifySubscriberToken(
  deps: { database: Database<PlatformDB>; secretBox: SecretBox; clock: { now(): number; iso(): string } },
  appId: string,
  topic: string,
  token: string | null | undefined,
): Promise<boolean> {
  if (typeof token !== "string" || token.length > 4096) return false;
  const [payload, mac] = token.split(".");
  if (!payload || !mac || token.split(".").length !== 2) return false;
  const key = await appSigningKey(deps.database, deps.secretBox, appId, deps.clock.iso());
  const expected = Buffer.from(sign(key, payload));
  const given = Buffer.from(mac);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return false;
  try {
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as {
      a?: unknown;
      t?: unknown;
      e?: unknown;
    };
    return (
      claims.a === appId &&
      claims.t === topic &&
      typeof claims.e === "number" &&
      claims.e * 1000 > deps.clock.now()
    );
  } catch {
    return false;
  }
}

export function pubsubOps(deps: SdkDeps, call: SdkCall) {
  return {
    async publishDurable(t: unknown, message: unknown) {
      const topic = name("pubsub.publishDurable", "topic", t, 200);
      const msg = jsonSafe(message);
      const enqueued = await deps.events.publish({
        appId: call.appId,
        topic,
        message: msg,
        depth: call.depth,
      });
      return { enqueued };
    },
    async subscriberToken(t: unknown, opts: unknown) {
      const topic = name("pubsub.subscriberToken", "topic", t, 200);
      const o = options("pubsub.subscriberToken", opts, ["ttl_s"] as const);
      const clamp = deps.tokenTtl ?? {
        default: TOKEN_TTL_DEFAULT_S,
        min: TOKEN_TTL_MIN_S,
        max: TOKEN_TTL_MAX_S,
      };
      let ttl = clamp.default;
      if (o.ttl_s !== undefined && o.ttl_s !== null) {
        if (typeof o.ttl_s !== "number" || !Number.isFinite(o.ttl_s))
          fail("pubsub.subscriberToken", "ttl_s must be a number");
        ttl = Math.floor(o.ttl_s);
      }
      ttl = Math.min(clamp.max, Math.max(clamp.min, ttl));
      const key = await appSigningKey(deps.database, deps.secretBox, call.appId, deps.clock.iso());
      const expiresAtS = Math.floor(deps.clock.now() / 1000) + ttl;
      return mintSubscriberToken(key, call.appId, topic, expiresAtS);
    },
  };
}
