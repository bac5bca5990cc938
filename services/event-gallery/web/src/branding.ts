import { api } from "./api.js";
import { t } from "./i18n.js";
import { store } from "./store.js";

/** The open event card (GET /event/public): name, welcome texts, accent colour, cover, public URL. */
export interface PublicEvent {
  name: string;
  welcome_text_en: string;
  welcome_text_de: string;
  accent_color: string;
  cover_url: string | null;
  public_url: string | null;
}

export const publicEvent = store<PublicEvent | null>(null);

/** The seed's default name is a placeholder, not a name: show it in the reader's language. */
const DEFAULT_NAME = "Our Event";
export const eventName = (name: string | undefined | null): string =>
  !name || name === DEFAULT_NAME ? t("default_event_name") : name;

/** Readable text on the accent colour: dark on light colours, white on dark ones (WCAG luminance). */
export function onAccent(hex: string): string {
  const c = [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16) / 255);
  const [r, g, b] = c.map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)) as [
    number,
    number,
    number,
  ];
  const lum = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  return lum > 0.18 ? "#111118" : "#ffffff";
}

export function applyAccent(hex: string): void {
  if (!/^#[0-9a-fA-F]{6}$/.test(hex)) return;
  document.documentElement.style.setProperty("--accent", hex);
  document.documentElement.style.setProperty("--on-accent", onAccent(hex));
}

/** A failed load is tried again after 1, 2, 4 … seconds (at most 30), and at once when back online. */
let retryIn = 1000;
let retry: ReturnType<typeof setTimeout> | null = null;
const MAX_RETRY_MS = 30_000;

function retryLater(): void {
  if (retry !== null) return;
  retry = setTimeout(() => {
    retry = null;
    void loadPublicEvent();
  }, retryIn);
  retryIn = Math.min(retryIn * 2, MAX_RETRY_MS);
}

if (typeof window !== "undefined") {
  window.addEventListener("online", () => {
    if (retry === null) return;
    clearTimeout(retry);
    retry = null;
    void loadPublicEvent();
  });
}

/**
 * Loads the event card. A busy server or a dropped phone connection must not leave the join page
 * unbranded for good: a failure is retried in the background (the page shows defaults meanwhile).
 */
export async function loadPublicEvent(): Promise<PublicEvent | null> {
  try {
    const ev = await api<PublicEvent>("GET", "/event/public");
    publicEvent.set(ev);
    applyAccent(ev.accent_color);
    retryIn = 1000;
    return ev;
  } catch {
    retryLater();
    return null;
  }
}

/** Where guests join: the configured public address, else this page's origin. */
export const joinUrl = (ev: PublicEvent | null): string => `${ev?.public_url ?? location.origin}/join`;
