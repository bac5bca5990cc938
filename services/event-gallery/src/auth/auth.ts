import { type Clock, toIso } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { forbidden, unauthorized } from "@app/kit/errors";
import { presentedCredentials } from "@app/kit/http";
import type { Auth, AuthedUser, RequestLike } from "../context.js";
import type { GalleryDB, Role } from "../db/schema.js";
import { groupRead } from "../limits/group-read.js";
import { liveSession, liveSessions } from "./repository.js";
import type { SessionSource, SessionTokens } from "./sessions.js";

const RANK: Record<Role, number> = { guest: 0, host: 1, admin: 2 };
export const roleAtLeast = (role: Role, min: Role) => RANK[role] >= RANK[min];

/** The client's address as TRUST_PROXY allows it to be known (kit http/proxy), else the peer. */
export function clientIpOf(req: RequestLike): string {
  return req.ip ?? req.socket.remoteAddress ?? "unknown";
}

export function createAuth(deps: {
  database: Database<GalleryDB>;
  tokens: SessionTokens;
  clock: Clock;
}): Auth {
  const { database, tokens, clock } = deps;
  // Hot path: the live rows are read on every request (a ban, demotion or logout counts at once,
  // on every process), through the reader so the read never queues behind writes.
  const { db, reader } = database;
  // PostgreSQL: concurrent requests' session reads go out together (one statement and one pooled
  // connection per batch, sent after each request arrived, so every read is as live as one of its
  // own). SQLite answers synchronously on this thread, so a batch never forms there: each request
  // runs the single-session statement (cheaper than the list form). The stamp is read in both.
  // The time bound of the read, as ISO text made once per millisecond (not once per request).
  let isoMs = Number.NaN;
  let iso = "";
  const nowIso = () => {
    const ms = clock.now();
    if (ms !== isoMs) {
      iso = toIso(ms);
      isoMs = ms;
    }
    return iso;
  };
  const live: SessionSource = database.dialect.groupsReads
    ? groupRead(async (ids: readonly string[]) => {
        const rows = await liveSessions(reader, [...new Set(ids)], nowIso());
        const byId = new Map(rows.map((r) => [r.session_id, r]));
        return ids.map((id) => byId.get(id));
      })
    : (sessionId) => liveSession(reader, sessionId, nowIso());

  const fromSessionToken = async (token: string) => {
    // Signature checked once per token string (cached); the session row is read every time.
    const c = await tokens.claims(token, "session");
    if (!c) return null;
    return tokens.lookup(live, { sessionId: c.sid, tokenHash: c.tokenHash });
  };
  const fromMediaToken = async (token: string) => {
    const c = await tokens.claims(token, "media");
    if (!c) return null;
    const row = await tokens.lookup(live, { sessionId: c.sid });
    return row && (c.sub === null || row.id === c.sub) ? row : null;
  };

  return {
    async requireUser(req, opts = {}) {
      const bearer = presentedCredentials(req.headers)[0];
      let row = bearer ? await fromSessionToken(bearer) : null;
      if (!row && !bearer && opts.allowMediaToken) {
        const t = (req.query as Record<string, unknown> | undefined)?.t;
        if (typeof t === "string" && t !== "") row = await fromMediaToken(t);
      }
      if (!row) throw unauthorized("Sign in again: the session is missing, invalid or expired.");
      await tokens.touch(db, row);
      const user: AuthedUser = {
        id: row.id,
        display_name: row.display_name,
        role: row.role,
        is_banned: row.is_banned === 1,
        sessionId: row.session_id,
        // PostgreSQL hands a bigint back as a string.
        ...(row.feed_stamp !== null && row.social_stamp !== null
          ? { stamps: { feed: Number(row.feed_stamp), social: Number(row.social_stamp) } }
          : {}),
        viewerRev: Number(row.viewer_rev),
        hasPending: Number(row.has_pending) === 1,
      };
      if (opts.minRole && !roleAtLeast(user.role, opts.minRole)) throw forbidden();
      if (opts.write && user.is_banned) throw forbidden("Your account is read-only.", "banned");
      return user;
    },
    mediaToken: (user) => tokens.mediaToken(user.sessionId, user.id),
    clientIp: clientIpOf,
  };
}
