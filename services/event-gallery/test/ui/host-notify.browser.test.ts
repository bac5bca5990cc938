import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BrowserGallery, LAPTOP, PHONE, startBrowserGallery } from "./browser-kit.js";

/**
 * Host notifications in Chromium (issue 27, item 6): the per-device opt-in on /host in English and
 * German, the root-scope service worker, and what it shows for a push (delivered through the
 * DevTools protocol: no push service is reachable here). Screenshots: .test-artifacts/notify-*.png.
 */
const PASSWORD = "host notify admin password";

describe("host notifications in the browser", () => {
  let g: BrowserGallery;
  let hostToken: string;

  beforeAll(async () => {
    g = await startBrowserGallery("host_notify", { GALLERY_ADMIN_PASSWORD: PASSWORD });
    const post = async (path: string, body: unknown, token?: string) => {
      const res = await fetch(`${g.base}/api/v1${path}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify(body),
      });
      return (await res.json()) as { token: string; user: { id: string } };
    };
    const admin = (await post("/admin/login", { password: PASSWORD })).token;
    const host = await post("/join", { name: "Notify Host" });
    await fetch(`${g.base}/api/v1/host/users/${host.user.id}/promote`, {
      method: "POST",
      headers: { authorization: `Bearer ${admin}` },
    });
    hostToken = host.token;
  }, 120_000);
  afterAll(async () => g?.close());

  const hostPage = async (viewport: { width: number; height: number }, locale: string) => {
    const page = await g.newPage(viewport, locale);
    await page.context().grantPermissions(["notifications"], { origin: g.base });
    await page.addInitScript(`localStorage.setItem("gallery.token", ${JSON.stringify(hostToken)})`);
    await page.goto(`${g.base}/host`);
    await page.waitForSelector("[data-testid=host-notify] button");
    return page;
  };

  it("offers the opt-in per device in both languages", async () => {
    const sw = await fetch(`${g.base}/sw.js`);
    expect(sw.status).toBe(200);
    expect(sw.headers.get("content-type")).toMatch(/javascript/);

    const en = await hostPage(PHONE, "en-US");
    expect(await en.textContent("[data-testid=host-notify] button")).toBe("Notify me on this device");
    await g.shot(en, "notify-host-en-390");
    const de = await hostPage(LAPTOP, "de-DE");
    expect(await de.textContent("[data-testid=host-notify] button")).toBe("Auf diesem Gerät benachrichtigen");
    await g.shot(de, "notify-host-de-1366");
  });

  it("shows a pushed notification from the service worker in the browser's language", async () => {
    const page = await hostPage(PHONE, "de-DE");
    // Registering is what the button does first; subscribing needs a push service (none here).
    const scope = (await page.evaluate(`(async () => {
      const reg = await navigator.serviceWorker.register("/sw.js", { scope: "/" });
      await navigator.serviceWorker.ready;
      return reg.scope;
    })()`)) as string;
    expect(scope).toBe(`${g.base}/`);
    const cdp = await page.context().newCDPSession(page);
    const registrationId = await new Promise<string>((resolve) => {
      cdp.on("ServiceWorker.workerRegistrationUpdated", (e) => {
        const r = e.registrations.find((x) => x.scopeURL === scope && !x.isDeleted);
        if (r) resolve(r.registrationId);
      });
      void cdp.send("ServiceWorker.enable");
    });
    await cdp.send("ServiceWorker.deliverPushMessage", {
      origin: g.base,
      registrationId,
      data: JSON.stringify({
        kind: "uploads_pending",
        count: 3,
        title: "Uploads waiting",
        body: "x",
        url: "/host",
      }),
    });
    // waitForFunction would take the async predicate's promise itself as truthy: poll by
    // round trips instead (each awaits the page), until the worker has shown the notification.
    const notifications = () =>
      page.evaluate(`(async () => {
        const reg = await navigator.serviceWorker.getRegistration("/");
        const list = reg ? await reg.getNotifications() : [];
        return list.map((n) => ({ title: n.title, body: n.body, data: n.data }));
      })()`) as Promise<unknown[]>;
    let shown = await notifications();
    while (shown.length === 0) shown = await notifications();
    expect(shown).toEqual([
      { title: "Uploads warten", body: "3 Uploads warten auf Freigabe.", data: { url: "/host" } },
    ]);
  });
});
