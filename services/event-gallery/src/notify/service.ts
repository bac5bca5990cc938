import type { Clock } from "@app/kit/clock";
import { toIso } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { badRequest } from "@app/kit/errors";
import type { Logger } from "@app/kit/logger";
import { renderWebhook, type WebhookFormat } from "@app/kit/webhook-format";
import webpush from "web-push";
import type { BackgroundWorker, RateLimiter } from "../context.js";
import type { GalleryDB } from "../db/schema.js";
import { countPending } from "../premoderation/repository.js";
import type { EndpointRule } from "./endpoint.js";
import * as repo from "./repository.js";
import type { VapidKeys } from "./vapid.js";

const MINUTE = 60_000;
/** How often a process looks for uploads that arrived while a subscription was cooling down. */
const FLUSH_EVERY_MS = 15_000;
const SEND_TIMEOUT_MS = 10_000;

export type NotificationKind = "uploads_pending" | "pin_reset_requested";

/** The contract's payload, the same for Web Push and the webhook. */
export interface HostNotification {
  kind: NotificationKind;
  count: number;
  title: string;
  body: string;
  url: string;
}

export interface SubscriptionInput {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

export interface NotifierDeps {
  database: Database<GalleryDB>;
  clock: Clock;
  logger: Logger;
  limiter: RateLimiter;
  keys: VapidKeys;
  allowEndpoint: EndpointRule;
  webhook?: { url: string; format: WebhookFormat };
  /** VAPID `sub` claim: an https: or mailto: address push services can reach the operator at. */
  subject: string;
}

export type HostNotifier = ReturnType<typeof createHostNotifier>;

/**
 * Host notifications (issue 27, item 6): Web Push to each subscribed host device and the optional
 * webhook. "Uploads waiting" goes to a subscription at most once a minute; the claim is a
 * conditional UPDATE, so several processes share it. A push service answering 404 or 410 means
 * the subscription is gone: its row is removed.
 */
export function createHostNotifier(deps: NotifierDeps) {
  const inFlight = new Set<Promise<void>>();
  /** The newest pending upload the webhook announced (the webhook's minute is the shared limiter's). */
  let webhookPendingAt: string | null = null;

  async function subscribe(userId: string, input: SubscriptionInput): Promise<void> {
    const url = URL.canParse(input.endpoint) ? new URL(input.endpoint) : null;
    if (!url || !deps.allowEndpoint(url))
      throw badRequest(
        "invalid_subscription",
        "The push endpoint must be an https address of a push service.",
      );
    if (Buffer.from(input.keys.p256dh, "base64url").length !== 65)
      throw badRequest("invalid_subscription", "keys.p256dh must be a base64url P-256 public key.");
    if (Buffer.from(input.keys.auth, "base64url").length !== 16)
      throw badRequest("invalid_subscription", "keys.auth must be a base64url 16-byte secret.");
    await repo.upsertSubscription(
      deps.database.db,
      userId,
      { endpoint: url.href, p256dh: input.keys.p256dh, auth: input.keys.auth },
      deps.clock.iso(),
    );
  }

  async function unsubscribe(userId: string, endpoint: string): Promise<void> {
    const href = URL.canParse(endpoint) ? new URL(endpoint).href : endpoint;
    await repo.deleteSubscription(deps.database.db, href, userId);
  }

  function uploadsPending(): void {
    track(flushPending());
  }

  /** `count` is the number of open requests (at least this one). */
  function pinResetRequested(): void {
    track(
      repo.countPinResetRequests(deps.database.db).then((open) =>
        sendAll({
          kind: "pin_reset_requested",
          count: Math.max(open, 1),
          title: "PIN reset requested",
          body: "A guest asked for a new PIN.",
          url: "/host",
        }),
      ),
    );
  }

  /**
   * Announce waiting uploads to every subscription whose minute has passed and that has not yet
   * heard of the newest one. Called on each new pending upload and by the worker, which catches
   * uploads that arrived during a subscription's quiet minute.
   */
  async function flushPending(): Promise<void> {
    const { database, clock } = deps;
    const newest = await repo.newestPendingAt(database.db);
    if (!newest) return;
    const now = clock.now();
    const t = { now: toIso(now), cutoff: toIso(now - MINUTE), newest };
    const count = await countPending(database.db);
    const n: HostNotification = {
      kind: "uploads_pending",
      count,
      title: "Uploads waiting",
      body: count === 1 ? "1 upload is waiting for approval." : `${count} uploads are waiting for approval.`,
      url: "/host",
    };
    const subs = await repo.activeSubscriptions(database.db);
    const sends: Promise<void>[] = [];
    for (const s of subs) if (await repo.claimPendingSlot(database.db, s.endpoint, t)) sends.push(push(s, n));
    if (deps.webhook && (webhookPendingAt === null || webhookPendingAt < newest)) {
      const allowed = await deps.limiter.hit("notify-webhook-pending", 1, MINUTE).then(
        () => true,
        () => false,
      );
      if (allowed) {
        webhookPendingAt = newest;
        sends.push(hook(n));
      }
    }
    await Promise.all(sends);
  }

  /** Resolves when every send started so far has finished (tests; shutdown). */
  async function idle(): Promise<void> {
    while (inFlight.size > 0) await Promise.all(inFlight);
  }

  function worker(): BackgroundWorker {
    let timer: { cancel(): void } | null = null;
    return {
      name: "host-notifications",
      start: () => {
        timer ??= deps.clock.setInterval(() => uploadsPending(), FLUSH_EVERY_MS);
      },
      stop: async () => {
        timer?.cancel();
        timer = null;
        await idle();
      },
    };
  }

  async function sendAll(n: HostNotification): Promise<void> {
    const subs = await repo.activeSubscriptions(deps.database.db);
    await Promise.all([...subs.map((s) => push(s, n)), ...(deps.webhook ? [hook(n)] : [])]);
  }

  async function push(s: repo.SubscriptionRow, n: HostNotification): Promise<void> {
    const { keys, subject, logger, database } = deps;
    try {
      const req = webpush.generateRequestDetails(
        { endpoint: s.endpoint, keys: { p256dh: s.p256dh, auth: s.auth } },
        JSON.stringify(n),
        {
          vapidDetails: { subject, publicKey: keys.publicKey, privateKey: keys.privateKey },
          TTL: 6 * 3600,
          contentEncoding: "aes128gcm",
        },
      );
      // Checked again at send time: the rule may be stricter than when the row was stored.
      if (!deps.allowEndpoint(new URL(req.endpoint))) return;
      const res = await fetch(req.endpoint, {
        method: req.method,
        headers: req.headers as Record<string, string>,
        body: req.body ?? null,
        redirect: "manual",
        signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
      });
      await res.body?.cancel();
      if (res.status === 404 || res.status === 410) {
        await repo.deleteSubscription(database.db, s.endpoint);
        logger.info({ kind: n.kind }, "push subscription expired; removed");
      } else if (!res.ok)
        logger.warn({ kind: n.kind, status: res.status }, "push service refused a notification");
    } catch (err) {
      logger.warn({ kind: n.kind, err: (err as Error).message }, "push notification failed");
    }
  }

  async function hook(n: HostNotification): Promise<void> {
    const { webhook, logger, clock } = deps;
    if (!webhook) return;
    const r = renderWebhook(
      webhook.format,
      { event: n.kind, title: n.title, text: n.body, at: clock.iso(), priority: "default" },
      { uploads_pending: "camera", pin_reset_requested: "key" },
    );
    try {
      const res = await fetch(webhook.url, {
        method: "POST",
        headers: r.headers,
        body: r.body,
        signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
      });
      await res.body?.cancel();
      if (!res.ok) logger.warn({ kind: n.kind, status: res.status }, "notification webhook refused");
    } catch (err) {
      logger.warn({ kind: n.kind, err: (err as Error).message }, "notification webhook failed");
    }
  }

  function track(p: Promise<void>): void {
    const q = p.catch((err) => deps.logger.warn({ err }, "host notification failed"));
    inFlight.add(q);
    void q.finally(() => inFlight.delete(q));
  }

  return {
    /** The VAPID public key web apps subscribe with. */
    publicKey: deps.keys.publicKey,
    subscribe,
    unsubscribe,
    uploadsPending,
    pinResetRequested,
    flushPending,
    idle,
    worker,
  };
}

/** Push services want a contact: the public address when it is https, else a placeholder mailbox. */
export function vapidSubject(publicUrl: string | undefined): string {
  return publicUrl?.startsWith("https://") ? publicUrl : "mailto:host-notifications@gallery.invalid";
}
