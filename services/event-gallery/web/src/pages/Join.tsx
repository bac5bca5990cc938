import { useState } from "preact/hooks";
import { ApiError, api, session, type User } from "../api.js";
import { navigate, refreshMe } from "../app-state.js";
import { eventName, publicEvent } from "../branding.js";
import { lang, t } from "../i18n.js";
import { useStore } from "../store.js";

type Mode = "join" | "recover" | "request" | "pin";

/** The event's branding: cover photo, name and the welcome text in the reader's language. */
function Welcome() {
  const pub = useStore(publicEvent);
  useStore(lang);
  const text = pub ? (lang.value === "de" ? pub.welcome_text_de : pub.welcome_text_en) : "";
  return (
    <header class="welcome-head">
      {pub?.cover_url && <img class="cover" src={pub.cover_url} alt="" data-testid="cover" />}
      <h1 data-testid="event-name">{eventName(pub?.name)}</h1>
      <p class="welcome">{text || t("welcome_default")}</p>
    </header>
  );
}

/** Join by name (PIN shown once), sign in again with name + PIN, or ask a host for a PIN reset. */
export function JoinPage() {
  const [mode, setMode] = useState<Mode>("join");
  const [name, setName] = useState("");
  const [pin, setPin] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [info, setInfo] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const run = async (fn: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
    } catch (e) {
      setError(e instanceof ApiError ? e.message : t("error"));
    } finally {
      setBusy(false);
    }
  };

  const finish = async () => {
    await refreshMe();
    navigate("/");
  };

  if (mode === "pin")
    return (
      <main class="narrow card">
        <h1>{t("pin_title")}</h1>
        <p class="pin" data-testid="pin">
          {pin}
        </p>
        <p class="warn">{t("pin_write_down")}</p>
        <button type="button" class="primary" onClick={finish}>
          {t("pin_done")}
        </button>
      </main>
    );

  return (
    <main class="narrow card">
      {mode === "join" && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            run(async () => {
              // A retried join (lost answer) resumes the same account instead of failing as taken.
              const key = sessionStorage.getItem("gallery.join") ?? crypto.randomUUID();
              sessionStorage.setItem("gallery.join", key);
              const res = await api<{ token: string; pin: string; user: User }>("POST", "/join", {
                name,
                client_join_id: key,
              });
              sessionStorage.removeItem("gallery.join");
              session.setGuest(res.token);
              setPin(res.pin);
              setMode("pin");
            });
          }}
        >
          <Welcome />
          <h2>{t("join_title")}</h2>
          <p>{t("join_intro")}</p>
          <label>
            {t("your_name")}
            <input
              name="name"
              value={name}
              maxLength={40}
              required
              onInput={(e) => setName(e.currentTarget.value)}
            />
          </label>
          <button type="submit" class="primary" disabled={busy}>
            {t("join")}
          </button>
          <button type="button" class="link" onClick={() => setMode("recover")}>
            {t("have_account")}
          </button>
        </form>
      )}
      {mode === "recover" && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            run(async () => {
              const res = await api<{ token: string }>("POST", "/recover", { name, pin });
              session.setGuest(res.token);
              await finish();
            });
          }}
        >
          <h1>{t("recover_title")}</h1>
          <label>
            {t("your_name")}
            <input name="name" value={name} required onInput={(e) => setName(e.currentTarget.value)} />
          </label>
          <label>
            {t("pin")}
            <input
              name="pin"
              value={pin}
              inputMode="numeric"
              pattern="[0-9]{4}"
              maxLength={4}
              required
              onInput={(e) => setPin(e.currentTarget.value)}
            />
          </label>
          <button type="submit" class="primary" disabled={busy}>
            {t("sign_in")}
          </button>
          <button type="button" class="link" onClick={() => setMode("request")}>
            {t("forgot_pin")}
          </button>
          <button type="button" class="link" onClick={() => setMode("join")}>
            {t("back")}
          </button>
        </form>
      )}
      {mode === "request" && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            run(async () => {
              await api("POST", "/recover/request", { name });
              setInfo(t("reset_requested"));
            });
          }}
        >
          <h1>{t("forgot_pin")}</h1>
          <label>
            {t("your_name")}
            <input name="name" value={name} required onInput={(e) => setName(e.currentTarget.value)} />
          </label>
          <button type="submit" class="primary" disabled={busy}>
            {t("request_reset")}
          </button>
          <button type="button" class="link" onClick={() => setMode("recover")}>
            {t("back")}
          </button>
          {info && <p class="info">{info}</p>}
        </form>
      )}
      {error && <p class="error">{error}</p>}
    </main>
  );
}
