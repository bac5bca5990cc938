import { useEffect, useState } from "preact/hooks";
import { ApiError, api } from "../api.js";
import { t } from "../i18n.js";

const supported = () =>
  typeof window !== "undefined" &&
  "serviceWorker" in navigator &&
  "PushManager" in window &&
  "Notification" in window;

const keyBytes = (b64url: string): Uint8Array<ArrayBuffer> => {
  const b64 = b64url.replace(/-/g, "+").replace(/_/g, "/");
  const bin = atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
  const out = new Uint8Array(new ArrayBuffer(bin.length));
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
};

async function currentSubscription(): Promise<PushSubscription | null> {
  const reg = await navigator.serviceWorker.getRegistration("/");
  return (await reg?.pushManager.getSubscription()) ?? null;
}

/** Per-device opt-in to host notifications (Web Push through /sw.js). */
export function HostNotify() {
  const [on, setOn] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const ok = supported();

  useEffect(() => {
    if (ok)
      currentSubscription().then(
        (s) => setOn(s !== null),
        () => {},
      );
  }, []);

  const enable = async () => {
    if ((await Notification.requestPermission()) !== "granted") throw new Error(t("notify_denied"));
    const reg = await navigator.serviceWorker.register("/sw.js", { scope: "/" });
    await navigator.serviceWorker.ready;
    const { public_key } = await api<{ public_key: string }>("GET", "/push/key");
    const sub =
      (await reg.pushManager.getSubscription()) ??
      (await reg.pushManager.subscribe({
        userVisibleOnly: true,
        applicationServerKey: keyBytes(public_key),
      }));
    await api("POST", "/host/push/subscriptions", sub.toJSON());
  };
  const disable = async () => {
    const sub = await currentSubscription();
    if (!sub) return;
    await api("DELETE", "/host/push/subscriptions", { endpoint: sub.endpoint });
    await sub.unsubscribe();
  };
  const toggle = async () => {
    setBusy(true);
    setError(null);
    try {
      await (on ? disable() : enable());
      setOn(!on);
    } catch (e) {
      setError(e instanceof ApiError || e instanceof Error ? e.message : t("error"));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="card" data-testid="host-notify">
      <h2>{t("notify_title")}</h2>
      {!ok ? (
        <p class="muted">{t("notify_unsupported")}</p>
      ) : (
        <>
          <p class="muted">{t(on ? "notify_active" : "notify_hint")}</p>
          <button type="button" disabled={busy} aria-pressed={on} onClick={toggle}>
            {t(on ? "notify_off" : "notify_on")}
          </button>
        </>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}
