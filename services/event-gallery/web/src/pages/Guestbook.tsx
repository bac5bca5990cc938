import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { API, ApiError, api, type GuestbookEntry, type GuestbookPage, session } from "../api.js";
import { me } from "../app-state.js";
import { lang, t, tf } from "../i18n.js";
import { onLive } from "../live.js";
import { useStore } from "../store.js";

/** Longest voice message the server takes; the recorder stops a little before it. */
const VOICE_MAX_S = 60;
const TEXT_MAX = 2000;

/** The first container this browser's MediaRecorder can write (Chrome/Firefox WebM, Safari MP4). */
function recorderType(): string | null {
  if (typeof MediaRecorder === "undefined" || !navigator.mediaDevices?.getUserMedia) return null;
  for (const type of ["audio/webm;codecs=opus", "audio/webm", "audio/mp4", "audio/ogg;codecs=opus"])
    if (MediaRecorder.isTypeSupported(type)) return type;
  return "";
}

/** POST /guestbook as multipart (text + voice); JSON when there is no recording. */
async function send(text: string, voice: Blob | null): Promise<GuestbookEntry> {
  if (!voice) return (await api<{ entry: GuestbookEntry }>("POST", "/guestbook", { text })).entry;
  const form = new FormData();
  if (text) form.append("text", text);
  const ext = voice.type.includes("mp4") ? "m4a" : voice.type.includes("ogg") ? "ogg" : "webm";
  form.append("file", voice, `voice.${ext}`);
  const res = await fetch(`${API}/guestbook`, {
    method: "POST",
    headers: { authorization: `Bearer ${session.token() ?? ""}` },
    body: form,
  });
  const data = (await res.json().catch(() => ({}))) as {
    entry?: GuestbookEntry;
    error?: Record<string, unknown>;
  };
  if (!res.ok || !data.entry) {
    const err = data.error ?? {};
    throw new ApiError(res.status, String(err.code ?? "error"), String(err.message ?? res.statusText), err);
  }
  return data.entry;
}

const when = (iso: string) =>
  new Date(iso).toLocaleString(lang.value === "de" ? "de-DE" : "en-GB", {
    day: "numeric",
    month: "short",
    hour: "2-digit",
    minute: "2-digit",
  });

/** Record up to 60 s from the microphone; hands back the recording (or null when discarded). */
function VoiceRecorder({ voice, onVoice }: { voice: Blob | null; onVoice: (b: Blob | null) => void }) {
  const [recording, setRecording] = useState(false);
  const [seconds, setSeconds] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const rec = useRef<MediaRecorder | null>(null);
  const url = useRef<string | null>(null);
  const type = recorderType();

  useEffect(
    () => () => {
      rec.current?.stop();
      if (url.current) URL.revokeObjectURL(url.current);
    },
    [],
  );
  useEffect(() => {
    if (!recording) return;
    const started = Date.now();
    const timer = setInterval(() => {
      const s = (Date.now() - started) / 1000;
      setSeconds(Math.floor(s));
      // Stop just before the limit: the encoder pads the last frame.
      if (s >= VOICE_MAX_S - 0.5) rec.current?.stop();
    }, 250);
    return () => clearInterval(timer);
  }, [recording]);

  if (type === null) return <p class="muted small">{t("gb_voice_unsupported")}</p>;

  const start = async () => {
    setError(null);
    try {
      const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
      const r = new MediaRecorder(stream, type ? { mimeType: type } : undefined);
      const chunks: Blob[] = [];
      r.ondataavailable = (e) => e.data.size > 0 && chunks.push(e.data);
      r.onstop = () => {
        for (const track of stream.getTracks()) track.stop();
        setRecording(false);
        rec.current = null;
        if (chunks.length > 0) onVoice(new Blob(chunks, { type: r.mimeType || type || "audio/webm" }));
      };
      rec.current = r;
      r.start(1000);
      setSeconds(0);
      setRecording(true);
    } catch {
      setError(t("gb_mic_denied"));
    }
  };

  if (voice) {
    if (url.current) URL.revokeObjectURL(url.current);
    url.current = URL.createObjectURL(voice);
    return (
      <div class="row gb-voice">
        <audio controls src={url.current} data-testid="gb-preview" />
        <button type="button" class="link" onClick={() => onVoice(null)}>
          {t("gb_discard")}
        </button>
      </div>
    );
  }
  return (
    <div class="row gb-voice">
      {recording ? (
        <button type="button" class="danger" data-testid="gb-stop" onClick={() => rec.current?.stop()}>
          ■ {tf("gb_stop", { s: String(VOICE_MAX_S - seconds) })}
        </button>
      ) : (
        <button type="button" data-testid="gb-record" onClick={start}>
          <span aria-hidden="true" class="rec-dot">
            ●
          </span>{" "}
          {t("gb_record")}
        </button>
      )}
      {error && <span class="error">{error}</span>}
    </div>
  );
}

/** The guestbook tab: write a message (and a voice message where the event allows), read everyone's. */
export function GuestbookPanel() {
  const m = useStore(me);
  useStore(lang);
  const [items, setItems] = useState<GuestbookEntry[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [loaded, setLoaded] = useState(false);
  const [text, setText] = useState("");
  const [voice, setVoice] = useState<Blob | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [sent, setSent] = useState<string | null>(null);

  const reload = useCallback(async () => {
    const page = await api<GuestbookPage>("GET", "/guestbook?limit=30");
    setItems(page.items);
    setNext(page.next_cursor);
    setLoaded(true);
  }, []);

  useEffect(() => {
    reload().catch(() => setLoaded(true));
    let timer: ReturnType<typeof setTimeout> | null = null;
    return onLive((event, data) => {
      if (event === "guestbook-removed" && typeof data.id === "string") {
        setItems((cur) => cur.filter((i) => i.id !== data.id));
        return;
      }
      if (event === "user-hidden" && typeof data.user_id === "string") {
        setItems((cur) => cur.filter((i) => i.author.id !== data.user_id));
        return;
      }
      if (["guestbook-entry", "user-unhidden", "reconnected"].includes(event)) {
        if (timer) clearTimeout(timer);
        timer = setTimeout(() => reload().catch(() => {}), 200);
      }
    });
  }, [reload]);

  const more = async () => {
    if (!next) return;
    const page = await api<GuestbookPage>("GET", `/guestbook?limit=30&cursor=${encodeURIComponent(next)}`);
    setItems((cur) => [...cur, ...page.items.filter((i) => !cur.some((c) => c.id === i.id))]);
    setNext(page.next_cursor);
  };

  if (!m) return null;
  const isHost = m.user.role !== "guest";
  const closed = m.event.uploads_locked;
  const canWrite = m.event.guestbook_enabled && !m.user.is_banned && !closed;
  const length = [...text.trim()].length;

  const submit = async (e: Event) => {
    e.preventDefault();
    if (busy || (length === 0 && !voice)) return;
    setBusy(true);
    setError(null);
    setSent(null);
    try {
      const entry = await send(text.trim(), voice);
      setItems((cur) => [entry, ...cur.filter((i) => i.id !== entry.id)]);
      setText("");
      setVoice(null);
      setSent(entry.approval === "pending" ? t("gb_sent_pending") : t("gb_sent"));
    } catch (err) {
      setError(err instanceof ApiError ? err.message : t("error"));
    } finally {
      setBusy(false);
    }
  };

  const act = async (method: string, path: string, id: string, confirmText?: string) => {
    if (confirmText && !confirm(confirmText)) return;
    try {
      const res = await api<{ entry?: GuestbookEntry }>(method, path);
      if (res?.entry) {
        const entry = res.entry;
        setItems((cur) => cur.map((i) => (i.id === id ? entry : i)));
      } else setItems((cur) => cur.filter((i) => i.id !== id));
    } catch (err) {
      setError(err instanceof ApiError ? err.message : t("error"));
    }
  };

  return (
    <section class="guestbook" aria-labelledby="gb-title">
      <h2 id="gb-title" class="vh">
        {t("guestbook")}
      </h2>
      {m.user.is_banned && <p class="warn">{t("banned")}</p>}
      {!m.event.guestbook_enabled && <p class="notice">{t("gb_disabled")}</p>}
      {m.event.guestbook_enabled && closed && <p class="notice">{t("gb_closed")}</p>}
      {canWrite && (
        <form class="card gb-form" onSubmit={submit} data-testid="gb-form">
          <label>
            {t("gb_write")}
            <textarea
              value={text}
              rows={3}
              maxLength={TEXT_MAX}
              placeholder={t("gb_placeholder")}
              onInput={(e) => setText(e.currentTarget.value)}
              data-testid="gb-text"
            />
          </label>
          <div class="row wrap gb-actions">
            {m.event.guestbook_voice && <VoiceRecorder voice={voice} onVoice={setVoice} />}
            <span class="muted small gb-count">
              {length}/{TEXT_MAX}
            </span>
            <button
              type="submit"
              class="primary"
              disabled={busy || (length === 0 && !voice)}
              data-testid="gb-send"
            >
              {t("send")}
            </button>
          </div>
          {error && <p class="error">{error}</p>}
          {sent && (
            <p class="muted" role="status">
              {sent}
            </p>
          )}
        </form>
      )}
      {loaded && items.length === 0 && <p class="empty">{t("gb_empty")}</p>}
      <ul class="gb-list" data-testid="gb-list">
        {items.map((e) => (
          <li
            key={e.id}
            class={`card gb-entry ${e.approval === "pending" ? "is-pending" : ""}`}
            data-id={e.id}
          >
            <div class="gb-head">
              <b>{e.author.display_name}</b>
              <time class="muted small" dateTime={e.created_at}>
                {when(e.created_at)}
              </time>
              {e.approval === "pending" && <span class="pending-badge">{t("pending")}</span>}
            </div>
            {e.text && <p class="gb-text">{e.text}</p>}
            {e.voice_url && (
              <audio controls preload="none" src={e.voice_url} aria-label={t("gb_voice_message")} />
            )}
            <div class="row gb-tools">
              {isHost && e.approval === "pending" && (
                <button
                  type="button"
                  class="small primary"
                  onClick={() => act("POST", `/host/guestbook/${e.id}/approve`, e.id)}
                >
                  {t("approve")}
                </button>
              )}
              {e.author.id === m.user.id && !m.user.is_banned ? (
                <button
                  type="button"
                  class="link small"
                  onClick={() => act("DELETE", `/guestbook/${e.id}`, e.id, t("gb_confirm_delete"))}
                >
                  {t("delete")}
                </button>
              ) : (
                isHost && (
                  <button
                    type="button"
                    class="link small danger-text"
                    onClick={() => act("DELETE", `/host/guestbook/${e.id}`, e.id, t("gb_confirm_remove"))}
                  >
                    {t("remove")}
                  </button>
                )
              )}
            </div>
          </li>
        ))}
      </ul>
      {next && (
        <button type="button" class="link" onClick={() => more().catch(() => {})}>
          {t("load_more")}
        </button>
      )}
    </section>
  );
}
