import {
  type RenderedWebhook,
  renderWebhook,
  WEBHOOK_FORMATS,
  type WebhookFormat,
  type WebhookMessage,
  type WebhookPriority,
} from "@app/kit/webhook-format";

/** The alert shapes of ALERT_WEBHOOK_FORMAT: the kit's webhook formats (json, slack, ntfy, gotify). */
export const ALERT_FORMATS = WEBHOOK_FORMATS;
export type AlertFormat = WebhookFormat;
export type AlertPriority = WebhookPriority;
export type AlertMessage = WebhookMessage;
export type RenderedAlert = RenderedWebhook;

const NTFY_TAGS: Record<string, string> = {
  keepalive_stopped: "warning",
  token_expiring: "hourglass",
  recovered: "white_check_mark",
  digest: "school",
  test: "bell",
};

export function renderAlert(format: AlertFormat, m: AlertMessage): RenderedAlert {
  return renderWebhook(format, m, NTFY_TAGS);
}
