import { useEffect, useState } from "preact/hooks";
import { type Key, t, tf } from "./i18n.js";
import { blobOf, clearDone, type QueueItem, queue, removeItem, retryItem } from "./queue.js";
import { useStore } from "./store.js";

/** Sizes as people read them: 1 decimal below 10, whole numbers above. */
export function formatBytes(n: number): string {
  const units = ["B", "KB", "MB", "GB"];
  let v = n;
  let u = 0;
  while (v >= 1000 && u < units.length - 1) {
    v /= 1000;
    u++;
  }
  return `${u === 0 || v >= 10 ? Math.round(v) : v.toFixed(1)} ${units[u]}`;
}

const STATUS: Record<QueueItem["status"], Key> = {
  queued: "queued",
  uploading: "uploading",
  waiting: "q_waiting",
  done: "done",
  failed: "failed",
  locked: "waiting_locked",
};

const KNOWN_ERRORS = new Set([
  "quota_exceeded",
  "payload_too_large",
  "unsupported_media_type",
  "removed_by_host",
]);
const errorText = (i: QueueItem) =>
  i.errorCode && KNOWN_ERRORS.has(i.errorCode) ? t(`q_err_${i.errorCode}` as Key) : t("q_err_other");

/** A small preview of the queued file itself (an image, or a video's first frame). */
function Thumb({ item }: { item: QueueItem }) {
  const [url, setUrl] = useState<string | null>(null);
  useEffect(() => {
    const blob = blobOf(item.id);
    if (!blob) return;
    const u = URL.createObjectURL(blob);
    setUrl(u);
    return () => URL.revokeObjectURL(u);
  }, [item.id]);
  if (!url) return <span class="q-thumb" />;
  return item.type.startsWith("video/") ? (
    <video class="q-thumb" src={url} muted preload="metadata" />
  ) : (
    <img class="q-thumb" src={url} alt="" />
  );
}

/**
 * The upload queue: each file with its thumbnail, bytes acknowledged by the server, and state in
 * the guest's language; retry and remove where they make sense. Renders nothing when empty.
 */
export function UploadQueueView() {
  const items = useStore(queue);
  if (items.length === 0) return null;
  const total = items.reduce((n, i) => n + i.size, 0);
  const sent = items.reduce((n, i) => n + (i.status === "done" ? i.size : i.sent), 0);
  return (
    <div class="queue" aria-live="polite">
      <div class="row">
        <span>
          {t("total")}: {total ? Math.floor((sent * 100) / total) : 0}%
        </span>
        <progress max={total || 1} value={sent} />
        <button type="button" class="link" onClick={clearDone}>
          {t("clear")}
        </button>
      </div>
      {items.some((i) => i.status === "done" && i.pending) && (
        <p class="small q-approval-note" data-testid="queue-pending-note">
          {t("q_pending_note")}
        </p>
      )}
      {items.map((i) => (
        <div class={`row q-${i.status}${i.pending ? " q-approval" : ""}`} key={i.id} data-queue-item={i.id}>
          <Thumb item={i} />
          <span class="fname">{i.name}</span>
          <progress max={i.size || 1} value={i.status === "done" ? i.size : i.sent} />
          <span class="qbytes">
            {tf("q_bytes", {
              sent: formatBytes(i.status === "done" ? i.size : i.sent),
              total: formatBytes(i.size),
            })}
          </span>
          <span class="qstatus">{t(i.status === "done" && i.pending ? "pending" : STATUS[i.status])}</span>
          {i.status === "failed" && <span class="error small">{errorText(i)}</span>}
          {i.status === "failed" && (
            <button type="button" class="link" onClick={() => retryItem(i.id)}>
              {t("retry")}
            </button>
          )}
          {i.status !== "uploading" && i.status !== "done" && (
            <button type="button" class="link" onClick={() => removeItem(i.id)}>
              {t("remove")}
            </button>
          )}
        </div>
      ))}
    </div>
  );
}
