import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { Clock } from "@app/kit/clock";
import { toIso } from "@app/kit/clock";
import type { Kysely } from "@app/kit/db";
import { newId } from "@app/kit/ids";
import { compactVerify, SignJWT } from "jose";
import type { GalleryDB } from "../db/schema.js";
import {
  insertSession,
  liveSession,
  revokeSession,
  type SessionUserRow,
  slideSession,
} from "./repository.js";

export type { SessionUserRow } from "./repository.js";

/** Idle lifetime of a session row; every use slides it forward (the row is authoritative). */
export const SESSION_IDLE_MS = 30 * 24 * 3600_000;
/** Sliding writes happen at most this often per session, so reads do not each cost a write. */
export const SESSION_TOUCH_MS = 5 * 60_000;
/** Media tokens (`?t=`) are short-lived and still need a live session row. */
export const MEDIA_TOKEN_MS = 2 * 3600_000;
/** Verified token strings remembered (the signature of a given string never changes). */
const VERIFIED_CAP = 20_000;

export const hashToken = (token: string) => createHash("sha256").update(token, "utf8").digest("hex");

interface Verified {
  typ: "session" | "media";
  sid: string;
  sub: string | null;
  /** Media tokens only: expiry in epoch ms. */
  expMs: number | null;
  tokenHash: string;
}

/**
 * Session tokens (HS256 JWT, hash stored in the session row) and media tokens. What a cache may
 * know is only that a token string is authentic and whose session it names; whether that session
 * and its user are still live (logout, ban, demotion) is read from the database on every request.
 */
/** Reads a session's live row (with its user's) now; undefined when unknown, revoked or expired. */
export type SessionSource = (sessionId: string) => Promise<SessionUserRow | undefined>;

/** The signing key (GALLERY_JWT_SECRET or the generated one) and the clock tokens are dated by. */
export interface SessionTokensDeps {
  key: Uint8Array;
  clock: Clock;
}

export type SessionTokens = ReturnType<typeof createSessionTokens>;

export function createSessionTokens(deps: SessionTokensDeps) {
  const { key, clock } = deps;
  const verified = new Map<string, Verified>();
  /** One media credential per session, reused while more than half of its life remains. */
  const mediaBySession = new Map<string, { token: string; expMs: number }>();

  /** Issue a session: a signed JWT whose SHA-256 is stored as the session row. */
  async function create(db: Kysely<GalleryDB>, userId: string): Promise<string> {
    const sid = newId();
    const now = clock.now();
    const token = await new SignJWT({ sid, typ: "session" })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject(userId)
      .setIssuedAt(Math.floor(now / 1000))
      // Informational: the row's expires_at, which slides, is what counts.
      .setExpirationTime(Math.floor((now + SESSION_IDLE_MS) / 1000))
      .sign(key);
    await insertSession(db, {
      id: sid,
      user_id: userId,
      token_hash: hashToken(token),
      now: toIso(now),
      expires_at: toIso(now + SESSION_IDLE_MS),
    });
    return token;
  }

  /**
   * A compact media token `m1.<session id>.<expiry, base36 seconds>.<HMAC>` (about 70 characters
   * instead of a 250-character JWT, since it repeats in every media URL of a page). Cached per
   * session, so a page or a viewer gets one credential rather than one per URL or per request.
   */
  async function mediaToken(sessionId: string, _userId?: string): Promise<string> {
    const now = clock.now();
    const cached = mediaBySession.get(sessionId);
    if (cached && cached.expMs - now > MEDIA_TOKEN_MS / 2) return cached.token;
    const expSec = Math.floor((now + MEDIA_TOKEN_MS) / 1000);
    const body = `m1.${sessionId}.${expSec.toString(36)}`;
    const token = `${body}.${macOf(body)}`;
    if (mediaBySession.size >= VERIFIED_CAP) mediaBySession.clear();
    mediaBySession.set(sessionId, { token, expMs: expSec * 1000 });
    return token;
  }

  function macOf(body: string): string {
    return createHmac("sha256", key).update(`media|${body}`).digest().subarray(0, 16).toString("base64url");
  }

  /** Signature and type check (cached per token string); a media token must also be unexpired. */
  async function claims(token: string, typ: "session" | "media"): Promise<Verified | null> {
    let v = verified.get(token);
    if (!v) {
      const fresh = token.startsWith("m1.") ? verifyMedia(token) : await verifyJwt(token);
      if (!fresh) return null;
      if (verified.size >= VERIFIED_CAP) {
        // Drop the oldest entry (Map keeps insertion order): a bounded cache, never a growing one.
        const oldest = verified.keys().next().value;
        if (oldest !== undefined) verified.delete(oldest);
      }
      verified.set(token, fresh);
      v = fresh;
    }
    if (v.typ !== typ) return null;
    if (v.typ === "media" && (v.expMs === null || v.expMs <= clock.now())) return null;
    return v;
  }

  function verifyMedia(token: string): Verified | null {
    const parts = token.split(".");
    if (parts.length !== 4) return null;
    const [, sid, exp, mac] = parts as [string, string, string, string];
    const want = Buffer.from(macOf(`m1.${sid}.${exp}`));
    const got = Buffer.from(mac);
    if (want.length !== got.length || !timingSafeEqual(want, got)) return null;
    const expSec = Number.parseInt(exp, 36);
    if (!Number.isFinite(expSec)) return null;
    return { typ: "media", sid, sub: null, expMs: expSec * 1000, tokenHash: "" };
  }

  async function verifyJwt(token: string): Promise<Verified | null> {
    try {
      const { payload, protectedHeader } = await compactVerify(token, key, { algorithms: ["HS256"] });
      if (protectedHeader.alg !== "HS256") return null;
      const c = JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown>;
      if (
        (c.typ !== "session" && c.typ !== "media") ||
        typeof c.sid !== "string" ||
        typeof c.sub !== "string"
      )
        return null;
      // Media JWTs of an earlier build stay valid until they expire.
      const expMs = c.typ === "media" ? (typeof c.exp === "number" ? c.exp * 1000 : null) : null;
      return { typ: c.typ, sid: c.sid, sub: c.sub, expMs, tokenHash: hashToken(token) };
    } catch {
      return null;
    }
  }

  /**
   * The live session row plus its user's live row, or null when unknown, revoked or idle-expired.
   * Read from `source`: a database, or a reader of live rows (auth's group read).
   */
  async function lookup(
    source: Kysely<GalleryDB> | SessionSource,
    where: { tokenHash: string; sessionId: string } | { sessionId: string },
  ) {
    const row =
      typeof source === "function"
        ? await source(where.sessionId)
        : await liveSession(source, where.sessionId, clock.iso());
    if (!row) return null;
    if ("tokenHash" in where && row.token_hash !== where.tokenHash) return null;
    return row;
  }

  /** Slide the idle expiry forward, at most once per SESSION_TOUCH_MS. */
  async function touch(db: Kysely<GalleryDB>, row: SessionUserRow): Promise<void> {
    const now = clock.now();
    if (now - Date.parse(row.last_seen_at) < SESSION_TOUCH_MS) return;
    await slideSession(db, row.session_id, toIso(now), toIso(now + SESSION_IDLE_MS));
  }

  async function revoke(db: Kysely<GalleryDB>, sessionId: string): Promise<void> {
    mediaBySession.delete(sessionId);
    await revokeSession(db, sessionId, clock.iso());
  }

  return { create, mediaToken, claims, lookup, touch, revoke };
}
