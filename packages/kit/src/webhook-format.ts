/**
 * One notification in the shape each receiving service takes (a service's *_WEBHOOK_FORMAT):
 *  - json: `{event, title, text, message, at}` (`text` for Slack-style consumers, `message` kept
 *    for receivers built against the earlier body);
 *  - slack: `{text}` (Slack and Mattermost incoming webhooks);
 *  - ntfy: the text as text/plain with `Title`, `Tags` and `Priority` headers;
 *  - gotify: `{title, message, priority}` (Gotify's POST /message).
 */
export const WEBHOOK_FORMATS = ["json", "slack", "ntfy", "gotify"] as const;
export type WebhookFormat = (typeof WEBHOOK_FORMATS)[number];

export type WebhookPriority = "low" | "default" | "high";

export interface WebhookMessage {
  event: string;
  title: string;
  text: string;
  /** RFC 3339 */
  at: string;
  priority: WebhookPriority;
}

export interface RenderedWebhook {
  headers: Record<string, string>;
  body: string;
}

const GOTIFY_PRIORITY: Record<WebhookPriority, number> = { low: 2, default: 5, high: 8 };

/** HTTP header values are Latin-1: anything else becomes "?" rather than failing the send. */
const headerSafe = (v: string): string => v.replace(/[^\x20-\x7e\xa0-\xff]/g, "?");

/** `ntfyTags` maps an event to ntfy's emoji tags (default "bell"). */
export function renderWebhook(
  format: WebhookFormat,
  m: WebhookMessage,
  ntfyTags: Record<string, string> = {},
): RenderedWebhook {
  const json = (v: unknown): RenderedWebhook => ({
    headers: { "content-type": "application/json" },
    body: JSON.stringify(v),
  });
  switch (format) {
    case "slack":
      return json({ text: `${m.title}\n${m.text}` });
    case "gotify":
      return json({ title: m.title, message: m.text, priority: GOTIFY_PRIORITY[m.priority] });
    case "ntfy":
      return {
        headers: {
          "content-type": "text/plain; charset=utf-8",
          title: headerSafe(m.title),
          tags: ntfyTags[m.event] ?? "bell",
          priority: m.priority,
        },
        body: m.text,
      };
    default:
      return json({ event: m.event, title: m.title, text: m.text, message: m.text, at: m.at });
  }
}
