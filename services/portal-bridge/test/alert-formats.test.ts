import type { IncomingHttpHeaders } from "node:http";
import { FakeClock } from "@app/kit/clock";
import { captureLogger } from "@app/kit/logger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAlerts } from "../src/alerts/alerts.js";
import type { AlertFormat } from "../src/alerts/format.js";
import { WebhookReceiver } from "./fakes/webhook.js";

/**
 * Receivers that accept only what the real services accept (their documented webhook shapes)
 * and answer 400 otherwise, so a wrong shape is a failed delivery.
 */
type Check = (headers: IncomingHttpHeaders, body: string) => string | null;
const json = (h: IncomingHttpHeaders, body: string): Record<string, unknown> | null => {
  if (!String(h["content-type"]).startsWith("application/json")) return null;
  try {
    return JSON.parse(body) as Record<string, unknown>;
  } catch {
    return null;
  }
};
const CHECKS: Record<AlertFormat, Check> = {
  // Slack / Mattermost incoming webhooks: JSON with a non-empty `text`.
  slack: (h, b) => {
    const v = json(h, b);
    return v && typeof v.text === "string" && v.text.length > 0 ? null : "slack needs {text}";
  },
  // Gotify POST /message: `message` required, `title` and integer `priority` optional.
  gotify: (h, b) => {
    const v = json(h, b);
    if (!v || typeof v.message !== "string" || v.message === "") return "gotify needs message";
    if (typeof v.title !== "string" || !Number.isInteger(v.priority)) return "gotify title/priority";
    return null;
  },
  // ntfy: the body is the message; Title, Tags, Priority headers.
  ntfy: (h, b) => {
    if (!String(h["content-type"]).startsWith("text/plain")) return "ntfy takes text";
    if (!b || !h.title || !h.tags) return "ntfy needs a body, Title and Tags";
    return ["min", "low", "default", "high", "max", "urgent", "1", "2", "3", "4", "5"].includes(
      String(h.priority),
    )
      ? null
      : "ntfy priority";
  },
  json: (h, b) => {
    const v = json(h, b);
    return v && ["event", "title", "text", "at"].every((k) => typeof v[k] === "string") ? null : "json shape";
  },
};

const alertsFor = (format: AlertFormat, url: string) =>
  createAlerts({
    url,
    format,
    clock: new FakeClock("2026-11-23T05:45:00.000Z"),
    logger: captureLogger().logger,
    keepalive: { status: () => ({}) as never, cause: null, onChange: () => undefined },
    tokens: { info: null, onReplaced: () => undefined },
    label: () => "",
  });

describe("alerts in the formats the services take", () => {
  const receivers = {} as Record<AlertFormat, WebhookReceiver>;
  beforeAll(async () => {
    for (const f of Object.keys(CHECKS) as AlertFormat[]) {
      receivers[f] = new WebhookReceiver(CHECKS[f]);
      await receivers[f].start();
    }
  });
  afterAll(async () => {
    for (const r of Object.values(receivers)) await r.stop();
  });

  it.each(Object.keys(CHECKS) as AlertFormat[])("%s: each event is accepted by its receiver", async (f) => {
    const r = receivers[f];
    const a = alertsFor(f, r.url);
    const text = "Anna: lesson 1 cancelled – Mathematics";
    for (const event of ["keepalive_stopped", "digest", "test"] as const)
      expect(await a.send(event, text), event).toEqual({ delivered: true, status: 200 });
    expect(r.got).toHaveLength(3);
    const last = r.got[2] as { headers: IncomingHttpHeaders; body: string };
    if (f === "ntfy") {
      expect(last.body).toBe(text);
      expect(last.headers.title).toBe("portal-bridge: test alert");
      expect(r.got[0]?.headers.priority).toBe("high");
    } else if (f === "slack")
      expect(JSON.parse(last.body)).toEqual({ text: `portal-bridge: test alert\n${text}` });
    else if (f === "gotify")
      expect(JSON.parse(r.got[0]?.body ?? "")).toEqual({
        title: "portal-bridge: keep-alive stopped",
        message: text,
        priority: 8,
      });
    else
      expect(JSON.parse(last.body)).toEqual({
        event: "test",
        title: "portal-bridge: test alert",
        text,
        message: text,
        at: "2026-11-23T05:45:00.000Z",
      });
  });

  it("a receiver that refuses the shape is a failed delivery with its status", async () => {
    // Gotify needs `message`: a Slack-shaped body is refused.
    const b = alertsFor("slack", receivers.gotify.url);
    expect(await b.send("test", "x")).toEqual({ delivered: false, status: 400 });
  });
});
