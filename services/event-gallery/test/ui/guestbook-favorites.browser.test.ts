import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  adminLogin,
  axeCheck,
  type BrowserGallery,
  joinAs,
  LAPTOP,
  PHONE,
  photoFile,
  startBrowserGallery,
} from "./browser-kit.js";

/**
 * Issue 27 part B in Chromium, at a phone (390×844) and a laptop (1366×900), in English and
 * German: the guestbook tab (text, a voice message recorded with MediaRecorder from Chromium's
 * fake microphone, live updates to another guest, host takedown); upload-only mode as a guest
 * sees it; favourites (star, filter, zip download) and highlights (host mark, filter, the
 * slideshow's "highlights only"). Screenshots land in
 * .test-artifacts/gbfav-*.png.
 */
const PASSWORD = "live admin password";

describe("guestbook, upload-only, favourites and highlights in a browser", () => {
  let g: BrowserGallery;
  let adminToken: string;

  const call = async (method: string, path: string, token: string, body?: unknown) => {
    const res = await fetch(`${g.base}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    return res.status === 204 ? null : res.json();
  };
  const setConfig = (patch: Record<string, unknown>) => call("PATCH", "/admin/config", adminToken, patch);
  const shot = (page: Page, name: string, fullPage = false) => g.shot(page, `gbfav-${name}`, fullPage);
  const tokenOf = (page: Page) => page.evaluate('localStorage.getItem("gallery.token")') as Promise<string>;

  beforeAll(async () => {
    g = await startBrowserGallery("gbfav", { GALLERY_ADMIN_PASSWORD: PASSWORD }, [
      "--use-fake-ui-for-media-stream",
      "--use-fake-device-for-media-stream",
    ]);
    const res = await fetch(`${g.base}/api/v1/admin/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ password: PASSWORD }),
    });
    adminToken = ((await res.json()) as { token: string }).token;
  }, 120_000);
  afterAll(async () => {
    await g?.close();
  });

  it("guestbook: text and a recorded voice message, live to another guest, removed by a host", {
    timeout: 180_000,
  }, async () => {
    await setConfig({ guestbook_voice: true });
    // ---- Ann on a phone, in English.
    const ann = await g.newPage(PHONE);
    await joinAs(g, ann, "Ann");
    await ann.click("[data-testid=tab-guestbook]");
    await ann.waitForSelector("[data-testid=gb-form]");
    expect(ann.url()).toMatch(/#guestbook$/);
    await expect.poll(() => ann.textContent(".empty")).toContain("No messages yet");

    // ---- Ben on a laptop, in German, with the guestbook open before Ann writes.
    const ben = await g.newPage(LAPTOP, "de-DE");
    await joinAs(g, ben, "Ben");
    await ben.click("[data-testid=tab-guestbook]");
    await ben.waitForSelector("[data-testid=gb-form]");
    expect(await ben.textContent("[data-testid=tab-guestbook]")).toBe("Gästebuch");

    await ann.fill("[data-testid=gb-text]", "Congratulations, you two! 🥂");
    await ann.click("[data-testid=gb-send]");
    await ann.waitForSelector(".gb-entry >> text=Congratulations, you two!");
    expect(await ann.textContent("[role=status]")).toContain("Thank you");
    // Live: Ben's open page shows it without a reload.
    await ben.waitForSelector(".gb-entry >> text=Congratulations, you two!", { timeout: 15_000 });

    // A voice message from the fake microphone: record, listen back, send.
    await ann.click("[data-testid=gb-record]");
    await ann.waitForSelector("[data-testid=gb-stop]");
    await ann.waitForTimeout(2_500);
    await shot(ann, "guestbook-recording-phone-en");
    await ann.click("[data-testid=gb-stop]");
    await ann.waitForSelector("[data-testid=gb-preview]");
    await ann.fill("[data-testid=gb-text]", "And a song for you");
    await ann.click("[data-testid=gb-send]");
    await ann.waitForSelector(".gb-entry audio");
    const voiceUrl = await ann.getAttribute(".gb-entry audio", "src");
    expect(voiceUrl).toMatch(/^\/api\/v1\/guestbook\/[0-9a-f-]+\/voice\?t=/);
    const voice = await ann.evaluate(async (u) => {
      const r = await fetch(u as string);
      return {
        status: r.status,
        type: r.headers.get("content-type"),
        size: (await r.arrayBuffer()).byteLength,
      };
    }, voiceUrl);
    expect(voice.status).toBe(200);
    expect(voice.type).toMatch(/^audio\//);
    expect(voice.size).toBeGreaterThan(1000);
    await ben.waitForSelector(".gb-entry audio", { timeout: 15_000 });
    await shot(ann, "guestbook-phone-en", true);
    await shot(ben, "guestbook-laptop-de", true);
    await axeCheck(ann, "guestbook phone");

    // ---- A host (the admin) removes Ann's first message; it disappears from Ben's page live.
    const annToken = await tokenOf(ann);
    const list = (await call("GET", "/guestbook", annToken)) as { items: { id: string; text: string }[] };
    const first = list.items.find((i) => i.text.startsWith("Congratulations"));
    expect(first).toBeDefined();
    const host = await g.newPage(LAPTOP);
    await adminLogin(g, host, PASSWORD);
    await host.goto(`${g.base}/#guestbook`);
    await host.waitForSelector(`.gb-entry[data-id="${first?.id}"] .danger-text`);
    await shot(host, "guestbook-host-laptop-en");
    await host.click(`.gb-entry[data-id="${first?.id}"] .danger-text`);
    await expect.poll(() => ben.locator(`.gb-entry[data-id="${first?.id}"]`).count()).toBe(0);
    expect(g.dialogs.at(-1)).toContain("Remove this message");

    // ---- German phone: the tab and the form read in German.
    const cara = await g.newPage(PHONE, "de-DE");
    await joinAs(g, cara, "Cara");
    await cara.click("[data-testid=tab-guestbook]");
    await cara.waitForSelector(".gb-entry audio");
    expect(await cara.textContent("[data-testid=gb-form] label")).toContain("Hinterlasse eine Nachricht");
    expect(await cara.textContent("[data-testid=gb-record]")).toContain("Sprachnachricht aufnehmen");
    await shot(cara, "guestbook-phone-de", true);
    await setConfig({ guestbook_voice: false });

    // ---- Pre-moderation: Cara's message waits; the host's tab counts it live, approving shows it.
    await setConfig({ premoderation: true });
    await cara.fill("[data-testid=gb-text]", "Alles Gute euch beiden!");
    await cara.click("[data-testid=gb-send]");
    await cara.waitForSelector(".gb-entry.is-pending");
    expect(await cara.textContent("[role=status]")).toContain("sobald ein Gastgeber");
    await expect.poll(() => host.textContent("[data-testid=gb-waiting]")).toBe("1");
    await host.waitForSelector(".gb-entry.is-pending button.primary");
    await shot(host, "guestbook-pending-host-laptop-en");
    await host.click(".gb-entry.is-pending button.primary");
    await expect.poll(() => host.locator("[data-testid=gb-waiting]").count()).toBe(0);
    await ben.waitForSelector(".gb-entry >> text=Alles Gute euch beiden!", { timeout: 15_000 });
    await setConfig({ premoderation: false });
  });

  it("upload-only mode, favourites with their zip, highlights and the slideshow's highlights only", {
    timeout: 240_000,
  }, async () => {
    await setConfig({ upload_only: true });
    // The host (admin) shares a photo first, through the API.
    const hostPhoto = await photoFile(g, "host.jpg", 30);
    const form = new FormData();
    form.append("caption", "From the hosts");
    form.append(
      "file",
      new Blob([new Uint8Array((await import("node:fs")).readFileSync(hostPhoto))], { type: "image/jpeg" }),
      "host.jpg",
    );
    const up = await fetch(`${g.base}/api/v1/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminToken}` },
      body: form,
    });
    expect(up.status).toBe(201);
    const hostUpload = ((await up.json()) as { upload: { id: string } }).upload.id;

    // ---- Dora (phone, English): upload-only notice, and only her own photo in the feed.
    const dora = await g.newPage(PHONE);
    await joinAs(g, dora, "Dora");
    await dora.waitForSelector("[data-testid=upload-only]");
    expect(await dora.textContent("[data-testid=upload-only]")).toContain(
      "Upload-only until the hosts release",
    );
    await dora.click("[data-testid=upload-fab]");
    await dora.locator("[data-testid=file-input]").setInputFiles(await photoFile(g, "dora.jpg", 180));
    await dora.waitForSelector(".q-done", { timeout: 20_000 });
    await dora.waitForFunction("document.querySelectorAll('.tile').length === 1", null, { timeout: 15_000 });
    expect(await dora.locator(`.tile[data-id="${hostUpload}"]`).count()).toBe(0);
    await shot(dora, "upload-only-phone-en");
    const eli = await g.newPage(PHONE, "de-DE");
    await joinAs(g, eli, "Eli");
    expect(await eli.textContent("[data-testid=upload-only]")).toContain("Nur Hochladen");
    expect(await eli.locator(".tile").count()).toBe(0);
    await shot(eli, "upload-only-phone-de");

    // ---- The admin turns it off: everyone's photos show.
    await setConfig({ upload_only: false });
    await dora.reload();
    await dora.waitForSelector(`.tile[data-id="${hostUpload}"]`);
    expect(await dora.locator("[data-testid=upload-only]").count()).toBe(0);

    // ---- Favourites: star the hosts' photo, filter, download the zip.
    await dora.click(`.tile[data-id="${hostUpload}"]`);
    await dora.click(".lightbox [data-testid=favorite]");
    await expect
      .poll(() => dora.getAttribute(".lightbox [data-testid=favorite]", "aria-pressed"))
      .toBe("true");
    await shot(dora, "favorite-lightbox-phone-en");
    await dora.keyboard.press("Escape");
    await dora.click("[data-testid=favorites]");
    await dora.waitForFunction("document.querySelectorAll('.tile').length === 1", null, { timeout: 10_000 });
    expect(await dora.locator(`.tile[data-id="${hostUpload}"] .fav-badge`).count()).toBe(1);
    const [download] = await Promise.all([
      dora.waitForEvent("download"),
      dora.click("[data-testid=favorites-zip]"),
    ]);
    expect(download.suggestedFilename()).toBe("Favorites.zip");
    await shot(dora, "favorites-phone-en");

    // ---- Highlights: the host marks Dora's photo on a laptop; Dora's highlights list shows it.
    const host = await g.newPage(LAPTOP, "de-DE");
    await adminLogin(g, host, PASSWORD);
    await host.goto(`${g.base}/`);
    const doraTile = host.locator(".tile", { hasText: "Dora" }).first();
    await doraTile.waitFor();
    const doraUpload = await doraTile.getAttribute("data-id");
    await doraTile.click();
    await host.click(".lightbox [data-testid=highlight]");
    await expect
      .poll(() => host.getAttribute(".lightbox [data-testid=highlight]", "aria-pressed"))
      .toBe("true");
    expect(await host.textContent(".lightbox [data-testid=favorite]")).toContain("Favorit");
    await host.keyboard.press("Escape");
    await host.waitForSelector(`.tile[data-id="${doraUpload}"] [data-testid=highlight-badge]`);
    await shot(host, "highlight-laptop-de");
    await dora.click("[data-testid=highlights]");
    await dora.waitForSelector(`.tile[data-id="${doraUpload}"]`);
    expect(await dora.locator(".tile").count()).toBe(1);
    await shot(dora, "highlights-phone-en");

    // ---- The slideshow shows only highlights when asked (remembered).
    await host.goto(`${g.base}/slideshow`);
    await host.click("[data-testid=highlights-toggle]");
    await expect.poll(() => host.textContent("[data-testid=highlights-toggle]")).toBe("Alle Fotos");
    await host.waitForSelector(".slideshow figcaption", { timeout: 15_000 });
    await expect.poll(() => host.textContent(".slideshow figcaption")).toContain("Dora");
    await shot(host, "slideshow-highlights-laptop-de");
    expect(await host.evaluate("localStorage.getItem('slideshow.highlights')")).toBe("1");
  });
});
