/**
 * One alert in the shape each receiving service takes (ALERT_WEBHOOK_FORMAT):
 *  - json: `{event, title, text, message, at}` (`text` for Slack-style consumers, `message` kept
 *    for receivers built against the earlier body);
 *  - slack: `{text}` (Slack and Mattermost incoming webhooks);
 *  - ntfy: the text as text/plain with `Title`, `Tags` and `Priority` headers;
 *  - gotify: `{title, message, priority}` (Gotify's POST /message).
 */
export const ALERT_FORMATS = ["json", "slack", "ntfy", "gotify"] as const;
export type AlertFormat = (typeof ALERT_FORMATS)[number];

export type AlertPriority = "low" | "default" | "high";

export interface AlertMessage {
  event: string;
  title: string;
  text: string;
  /** RFC 3339 */
  at: string;
  priority: AlertPriority;
}

export interface RenderedAlert {
  headers: Record<string, string>;
  body: string;
}

const NTFY_TAGS: Record<string, string> = {
  keepalive_stopped: "warning",
  token_expiring: "hourglass",
  recovered: "white_check_mark",
  digest: "school",
  test: "bell",
};
const GOTIFY_PRIORITY: Record<AlertPriority, number> = { low: 2, default: 5, high: 8 };

/** HTTP header values are Latin-1: anything else becomes "?" rather than failing the send. */
const headerSafe = (v: string): string => v.replace(/[^\x20-\x7e\xa0-\xff]/g, "?");

export function renderAlert(format: AlertFormat, m: AlertMessage): RenderedAlert {
  const json = (v: unknown): RenderedAlert => ({
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
          tags: NTFY_TAGS[m.event] ?? "bell",
          priority: m.priority,
        },
        body: m.text,
      };
    default:
      return json({ event: m.event, title: m.title, text: m.text, message: m.text, at: m.at });
  }
}
