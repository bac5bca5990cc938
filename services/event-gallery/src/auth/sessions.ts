import { createHash } from "node:crypto";
import type { Clock } from "@app/kit/clock";
import { toIso } from "@app/kit/clock";
import type { Kysely } from "@app/kit/db";
import { newId } from "@app/kit/ids";
import { compactVerify, SignJWT } from "jose";
import type { GalleryDB, Role } from "../db/schema.js";

/** Idle lifetime of a session row; every use slides it forward (the row is authoritative). */
export const SESSION_IDLE_MS = 30 * 24 * 3600_000;
/** Sliding writes happen at most this often per session, so reads do not each cost a write. */
export const SESSION_TOUCH_MS = 5 * 60_000;
/** Media tokens (`?t=`) are short-lived and still need a live session row. */
export const MEDIA_TOKEN_MS = 2 * 3600_000;

export const hashToken = (token: string) => createHash("sha256").update(token, "utf8").digest("hex");

export interface SessionUserRow {
  session_id: string;
  last_seen_at: string;
  id: string;
  display_name: string;
  role: Role;
  is_banned: number;
}

export class SessionTokens {
  constructor(
    private readonly key: Uint8Array,
    private readonly clock: Clock,
  ) {}

  /** Issue a session: a signed JWT whose SHA-256 is stored as the session row. */
  async create(db: Kysely<GalleryDB>, userId: string): Promise<string> {
    const sid = newId();
    const now = this.clock.now();
    const token = await new SignJWT({ sid, typ: "session" })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject(userId)
      .setIssuedAt(Math.floor(now / 1000))
      // Informational: the row's expires_at, which slides, is what counts.
      .setExpirationTime(Math.floor((now + SESSION_IDLE_MS) / 1000))
      .sign(this.key);
    await db
      .insertInto("sessions")
      .values({
        id: sid,
        user_id: userId,
        token_hash: hashToken(token),
        created_at: toIso(now),
        last_seen_at: toIso(now),
        expires_at: toIso(now + SESSION_IDLE_MS),
        revoked_at: null,
      })
      .execute();
    return token;
  }

  async mediaToken(sessionId: string, userId: string): Promise<string> {
    const now = this.clock.now();
    return new SignJWT({ sid: sessionId, typ: "media" })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject(userId)
      .setIssuedAt(Math.floor(now / 1000))
      .setExpirationTime(Math.floor((now + MEDIA_TOKEN_MS) / 1000))
      .sign(this.key);
  }

  /** Signature and type check only; expiry of a session token is the row's business. */
  async claims(token: string, typ: "session" | "media"): Promise<{ sid: string; sub: string } | null> {
    try {
      const { payload, protectedHeader } = await compactVerify(token, this.key, { algorithms: ["HS256"] });
      if (protectedHeader.alg !== "HS256") return null;
      const c = JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown>;
      if (c.typ !== typ || typeof c.sid !== "string" || typeof c.sub !== "string") return null;
      if (typ === "media" && (typeof c.exp !== "number" || c.exp * 1000 <= this.clock.now())) return null;
      return { sid: c.sid, sub: c.sub };
    } catch {
      return null;
    }
  }

  /** The live session row plus its user's live row, or null when unknown, revoked or idle-expired. */
  async lookup(db: Kysely<GalleryDB>, where: { tokenHash: string } | { sessionId: string }) {
    let q = db
      .selectFrom("sessions")
      .innerJoin("users", "users.id", "sessions.user_id")
      .select([
        "sessions.id as session_id",
        "sessions.last_seen_at",
        "users.id",
        "users.display_name",
        "users.role",
        "users.is_banned",
      ])
      .where("sessions.revoked_at", "is", null)
      .where("sessions.expires_at", ">", this.clock.iso());
    q =
      "tokenHash" in where
        ? q.where("sessions.token_hash", "=", where.tokenHash)
        : q.where("sessions.id", "=", where.sessionId);
    return (await q.executeTakeFirst()) ?? null;
  }

  /** Slide the idle expiry forward, at most once per SESSION_TOUCH_MS. */
  async touch(db: Kysely<GalleryDB>, row: SessionUserRow): Promise<void> {
    const now = this.clock.now();
    if (now - Date.parse(row.last_seen_at) < SESSION_TOUCH_MS) return;
    await db
      .updateTable("sessions")
      .set({ last_seen_at: toIso(now), expires_at: toIso(now + SESSION_IDLE_MS) })
      .where("id", "=", row.session_id)
      .execute();
  }

  async revoke(db: Kysely<GalleryDB>, sessionId: string): Promise<void> {
    await db
      .updateTable("sessions")
      .set({ revoked_at: this.clock.iso() })
      .where("id", "=", sessionId)
      .where("revoked_at", "is", null)
      .execute();
  }
}
