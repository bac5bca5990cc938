import { toIso } from "@app/kit/clock";
import { AppError, conflict, tooManyRequests, unauthorized } from "@app/kit/errors";
import { newId } from "@app/kit/ids";
import type { SessionTokens } from "../auth/sessions.js";
import type { GalleryContext } from "../context.js";
import type { NameRules } from "./names.js";
import * as repo from "./repository.js";
import { hashSecret, newPin, verifyDummy, verifySecret } from "./secrets.js";
import { type UserView, userView } from "./users.js";

const MINUTE = 60_000;
/** Join: attempts per (IP, name) per minute, successful or not. */
export const JOIN_NAME_LIMIT = 5;
/** Recover: failures per (IP, name); clamped to 4 so one IP stays far below the account lock. */
export const RECOVER_NAME_FAILURES = 4;
/** The per-(IP, name) failure window equals the streak decay, so one IP cannot reach the lock. */
export const RECOVER_NAME_WINDOW_MS = 15 * MINUTE;
export const PIN_LOCK_THRESHOLD = 12;
export const PIN_LOCK_MS = 15 * MINUTE;
export const PIN_STREAK_DECAY_MS = 15 * MINUTE;
export const ADMIN_LOGIN_PER_IP = 10;

export interface JoinResult {
  resumed: boolean;
  token: string;
  pin: string;
  user: UserView;
}

/** What join, recover and admin login need: parts of the gallery context, name rules and session tokens. */
export type IdentityDeps = Pick<
  GalleryContext,
  "clock" | "database" | "limiter" | "settings" | "bus" | "notify"
> & {
  names: NameRules;
  tokens: SessionTokens;
};

export type IdentityService = ReturnType<typeof createIdentityService>;

/** Join, recover, admin login, logout and PIN-reset requests. */
export function createIdentityService(deps: IdentityDeps) {
  async function join(
    ip: string,
    input: { name: unknown; client_join_id?: string | undefined },
  ): Promise<JoinResult> {
    const ctx = deps;
    await ctx.limiter.hit(`join-ip:${ip}`, await ctx.settings.get("join_ip_rate_per_min"), MINUTE);
    await ctx.limiter.hit(`join-name:${ip}:${deps.names.attemptKey(input.name)}`, JOIN_NAME_LIMIT, MINUTE);
    const { name, key } = deps.names.check(input.name);
    const pin = newPin();
    const pinHash = await hashSecret(pin);
    const joinId = input.client_join_id;
    if (joinId) {
      const resumed = await resume(joinId, pinHash, pin);
      if (resumed) return resumed;
    }
    const now = ctx.clock.iso();
    const id = newId();
    try {
      const token = await ctx.database.writeTx(async (trx) => {
        await repo.insertUser(trx, {
          id,
          name,
          key,
          pinHash,
          passwordHash: null,
          clientJoinId: joinId ?? null,
          now,
        });
        return deps.tokens.create(trx, id);
      });
      return {
        resumed: false,
        token,
        pin,
        user: { id, display_name: name, role: "guest", is_banned: false },
      };
    } catch (err) {
      if (!ctx.database.dialect.isUniqueViolation(err)) throw err;
      // A concurrent retry with the same client_join_id won the insert: resume it.
      if (joinId) {
        const resumed = await resume(joinId, pinHash, pin);
        if (resumed) return resumed;
      }
      throw conflict("name_taken", "This name is already taken.", { field: "name" });
    }
  }

  /** A retried join: same account, fresh PIN (only its hash is kept), new session. */
  async function resume(joinId: string, pinHash: string, pin: string): Promise<JoinResult | null> {
    const ctx = deps;
    return ctx.database.writeTx(async (trx) => {
      const user = await repo.findUserByJoinId(trx, joinId);
      if (!user) return null;
      await repo.setPinHash(trx, user.id, pinHash, ctx.clock.iso());
      const token = await deps.tokens.create(trx, user.id);
      return { resumed: true, token, pin, user: userView(user) };
    });
  }

  async function recover(
    ip: string,
    input: { name: unknown; pin: string },
  ): Promise<{ token: string; user: UserView }> {
    const ctx = deps;
    await ctx.limiter.hit(`recover-ip:${ip}`, await ctx.settings.get("recover_ip_rate_per_min"), MINUTE);
    const checked = deps.names.inspect(input.name);
    if ("problem" in checked && checked.problem === "invalid_name")
      throw new AppError(422, "invalid_name", checked.message, { field: "name" });
    const key = "key" in checked ? checked.key : null;
    const bucket = `recover-fail:${ip}:${key ?? "reserved"}`;
    // A spent budget only changes what a failure answers: the PIN is still verified below.
    let spent: AppError | null = null;
    try {
      await ctx.limiter.check(bucket, RECOVER_NAME_FAILURES, RECOVER_NAME_WINDOW_MS, "too_many_attempts");
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      spent = err;
    }
    const found = key ? await repo.findUserByKey(ctx.database.db, key) : undefined;
    const user = found && found.role !== "admin" && found.recovery_pin_hash ? found : undefined;
    const ok =
      user?.recovery_pin_hash && /^\d{4}$/.test(input.pin)
        ? await verifySecret(user.recovery_pin_hash, input.pin)
        : await verifyDummy(input.pin);
    const now = ctx.clock.now();
    if (user?.pin_locked_until && Date.parse(user.pin_locked_until) > now)
      throw pinLocked(user.pin_locked_until, now);

    if (ok && user) {
      const token = await ctx.database.writeTx(async (trx) => {
        await repo.clearPinFailures(trx, user.id, toIso(now));
        return deps.tokens.create(trx, user.id);
      });
      return { token, user: userView(user) };
    }
    if (spent) throw spent;
    await ctx.limiter.hit(bucket, RECOVER_NAME_FAILURES, RECOVER_NAME_WINDOW_MS, "too_many_attempts");
    if (user) {
      const lockedUntil = await recordFailure(user.id, now);
      if (lockedUntil) throw pinLocked(lockedUntil, now);
    }
    throw unauthorized("Name or PIN is not correct.", "invalid_credentials");
  }

  /** Count one wrong PIN on the account; returns the lock deadline when this failure locks it. */
  async function recordFailure(userId: string, now: number): Promise<string | null> {
    const ctx = deps;
    const { database } = ctx;
    return database.writeTx(async (trx) => {
      const row = await repo.lockPinStreak(trx, database.dialect, userId);
      const decayed =
        !row.last_failed_pin_at || now - Date.parse(row.last_failed_pin_at) >= PIN_STREAK_DECAY_MS;
      const streak = (decayed ? 0 : row.failed_pin_attempts) + 1;
      const lock = streak >= PIN_LOCK_THRESHOLD ? toIso(now + PIN_LOCK_MS) : null;
      await repo.storePinFailure(trx, userId, streak, lock, toIso(now));
      return lock;
    });
  }

  /** Always succeeds for the caller (no account signal); only the per-IP ceiling answers 429. */
  async function requestPinReset(ip: string, input: { name: unknown }): Promise<void> {
    const ctx = deps;
    await ctx.limiter.hit(
      `recover-request-ip:${ip}`,
      await ctx.settings.get("recover_ip_rate_per_min"),
      MINUTE,
    );
    const checked = deps.names.inspect(input.name);
    if ("problem" in checked) return;
    const now = ctx.clock.iso();
    const user = await ctx.database.writeTx(async (trx) => {
      const u = await repo.findUserByKey(trx, checked.key);
      if (!u || u.role === "admin") return null;
      await repo.markPinResetRequested(trx, u.id, now);
      return u;
    });
    if (user) {
      ctx.bus.publish(
        "pin-reset-requested",
        { user_id: user.id, display_name: user.display_name, requested_at: now },
        { hostsOnly: true },
      );
      ctx.notify.pinResetRequested();
    }
  }

  async function adminLogin(ip: string, password: string): Promise<{ token: string; user: UserView }> {
    const ctx = deps;
    await ctx.limiter.hit(`admin-login-ip:${ip}`, ADMIN_LOGIN_PER_IP, MINUTE);
    // Resolved by role, never by name: a guest holding the admin's name is irrelevant here.
    const admin = await repo.findAdmin(ctx.database.db);
    const ok = admin?.password_hash
      ? await verifySecret(admin.password_hash, password)
      : await verifyDummy(password);
    if (!ok || !admin) throw unauthorized("The password is not correct.", "invalid_credentials");
    const token = await ctx.database.writeTx((trx) => deps.tokens.create(trx, admin.id));
    return { token, user: userView(admin) };
  }

  function logout(sessionId: string): Promise<void> {
    return deps.tokens.revoke(deps.database.db, sessionId);
  }

  return { join, recover, requestPinReset, adminLogin, logout };
}

function pinLocked(lockedUntil: string, now: number): AppError {
  return tooManyRequests(
    (Date.parse(lockedUntil) - now) / 1000,
    "Too many wrong PINs; this account is locked for a while.",
    "pin_locked",
    { locked_until: lockedUntil },
  );
}
