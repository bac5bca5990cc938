// The gallery's service worker (scope "/"): shows host notifications sent by Web Push and opens
// their page on a click. The payload is {kind, count, title, body, url}; the text is chosen here
// in the browser's language, the payload's English text is the fallback for unknown kinds.
const TEXT = {
  en: {
    uploads_pending: (n) => [
      "Uploads waiting",
      n === 1 ? "1 upload is waiting for approval." : `${n} uploads are waiting for approval.`,
    ],
    pin_reset_requested: () => ["PIN reset requested", "A guest asked for a new PIN."],
  },
  de: {
    uploads_pending: (n) => [
      "Uploads warten",
      n === 1 ? "1 Upload wartet auf Freigabe." : `${n} Uploads warten auf Freigabe.`,
    ],
    pin_reset_requested: () => ["Neue PIN angefragt", "Ein Gast bittet um eine neue PIN."],
  },
};

self.addEventListener("push", (event) => {
  let data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch {
    data = {};
  }
  const lang = (self.navigator.language || "en").toLowerCase().startsWith("de") ? "de" : "en";
  const local = TEXT[lang][data.kind];
  const [title, body] = local
    ? local(Number(data.count) || 1)
    : [data.title || "Event Gallery", data.body || ""];
  event.waitUntil(
    self.registration.showNotification(title, {
      body,
      tag: data.kind || "gallery",
      data: { url: typeof data.url === "string" && data.url.startsWith("/") ? data.url : "/host" },
    }),
  );
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const url = new URL(event.notification.data?.url || "/host", self.location.origin).href;
  event.waitUntil(
    self.clients.matchAll({ type: "window", includeUncontrolled: true }).then((list) => {
      for (const c of list) if (c.url === url && "focus" in c) return c.focus();
      return self.clients.openWindow(url);
    }),
  );
});
