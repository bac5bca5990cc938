import { readFile } from "node:fs/promises";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { APP_ROUTES } from "../../src/http/app-routes.js";
import { testMp4 } from "../media/helpers.js";
import { type BrowserGallery, joinAs, LAPTOP, PHONE, photoFile, startBrowserGallery } from "./browser-kit.js";

/**
 * Issue 27, part A, in Chromium (390x844 and 1366x900, English and German): every page the app
 * declares answers with the app on a direct load (the printable card as a bookmark); with
 * approve-first on, a guest's own upload stays in their feed marked as waiting and the queue says
 * so, while others see nothing; a banned guest's notice is a warning; a long event name is shown
 * in full at 360 px. Screenshots: .test-artifacts/live-*.png.
 */
const PASSWORD = "live event admin password";
const LONG_NAME = "Anna & Ben – unsere Hochzeit im Schlossgarten Heidelberg";

describe("live event pages in the browser", () => {
  let g: BrowserGallery;
  let admin: string;
  const api = async (method: string, path: string, token?: string, body?: unknown) => {
    const res = await fetch(`${g.base}/api/v1${path}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
  let joined = 0;
  const guest = async (name: string) => {
    const res = await fetch(`${g.base}/api/v1/join`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": `10.27.0.${++joined}` },
      body: JSON.stringify({ name }),
    });
    return (await res.json()) as { token: string; user: { id: string } };
  };
  /** A page signed in as `token` (the web app keeps a guest's session in localStorage). */
  const signedIn = async (viewport: { width: number; height: number }, locale: string, token: string) => {
    const page = await g.newPage(viewport, locale);
    await page.addInitScript(`localStorage.setItem("gallery.token", ${JSON.stringify(token)})`);
    return page;
  };

  beforeAll(async () => {
    g = await startBrowserGallery("live_event", { GALLERY_ADMIN_PASSWORD: PASSWORD });
    admin = (await api("POST", "/admin/login", undefined, { password: PASSWORD })).token;
  }, 120_000);
  afterAll(async () => g?.close());

  it("answers every page the app declares with the app on a direct load, the card too", async () => {
    const host = await guest("Card Host");
    await api("POST", `/host/users/${host.user.id}/promote`, admin);
    for (const [viewport, locale] of [
      [PHONE, "en-US"],
      [LAPTOP, "de-DE"],
    ] as const) {
      const page = await signedIn(viewport, locale, host.token);
      for (const route of APP_ROUTES) {
        const res = await page.goto(`${g.base}${route}`);
        expect(res?.status(), route).toBe(200);
        expect(res?.headers()["content-type"], route).toMatch(/^text\/html/);
        await page.waitForFunction('(document.getElementById("app")?.childElementCount ?? 0) > 0');
        expect(await page.textContent("body"), route).not.toContain("not_found");
      }
      // The card as a bookmark, and after a reload.
      await page.goto(`${g.base}/host/card`);
      await page.waitForSelector("[data-testid=qr-card]");
      await page.reload();
      await page.waitForSelector("[data-testid=qr-card]");
      await g.shot(page, `live-card-direct-${viewport.width}-${locale}`);
    }
  }, 120_000);

  it("keeps a guest's own upload in their feed marked as waiting while hosts approve first; others see nothing", async () => {
    await api("PATCH", "/admin/config", admin, { premoderation: true });
    const other = await guest("Other Guest");
    for (const [viewport, locale, name, waiting] of [
      [PHONE, "en-US", "Ann Live", "Waiting for approval"],
      [LAPTOP, "de-DE", "Anke Live", "Wartet auf Freigabe"],
    ] as const) {
      const page = await g.newPage(viewport, locale);
      await joinAs(g, page, name);
      await page.click("[data-testid=upload-fab]");
      await page.locator("[data-testid=file-input]").setInputFiles(await photoFile(g, `${name}.jpg`, 60));
      await page.waitForSelector(".q-done", { timeout: 30_000 });
      await page.waitForSelector("[data-testid=queue-pending-note]");
      expect(await page.textContent(".q-done .qstatus")).toBe(waiting);
      // In the main feed (not only under "mine"), marked.
      await page.waitForSelector(".tile [data-testid=pending]", { timeout: 10_000 });
      expect(await page.textContent(".tile [data-testid=pending]")).toBe(waiting);
      await g.shot(page, `live-own-pending-${viewport.width}-${locale}`, true);
      await page.reload();
      await page.waitForSelector(".tile [data-testid=pending]", { timeout: 10_000 });
    }
    const feed = await api("GET", "/feed", other.token);
    expect(feed.items).toEqual([]);
    await api("PATCH", "/admin/config", admin, { premoderation: false });
  }, 120_000);

  it("moderates at wedding scale: large previews with caption and tags, video playback, select-many, keys, approve-all", async () => {
    await api("PATCH", "/admin/config", admin, { premoderation: true });
    // Uploads the tests above left waiting are not this test's queue.
    await api("POST", "/host/pending:approve", admin, { all: true });
    const host = await guest("Mod Host");
    await api("POST", `/host/users/${host.user.id}/promote`, admin);
    const ann = await guest("Mod Ann");
    const jpeg = await readFile(await photoFile(g, "mod.jpg", 30));
    const mp4 = await testMp4();
    const post = async (file: Buffer, type: string, name: string, caption: string, tags: string) => {
      const form = new FormData();
      form.set("caption", caption);
      form.set("hashtags", tags);
      form.set("file", new Blob([file], { type }), name);
      const res = await fetch(`${g.base}/api/v1/upload`, {
        method: "POST",
        headers: { authorization: `Bearer ${ann.token}` },
        body: form,
      });
      expect(res.status, await res.clone().text()).toBe(201);
    };
    for (const [viewport, locale] of [
      [PHONE, "en-US"],
      [LAPTOP, "de-DE"],
    ] as const) {
      for (let i = 0; i < 4; i++)
        await post(jpeg, "image/jpeg", `p${i}.jpg`, `Dance floor ${i}`, "dance party");
      await post(mp4, "video/mp4", "v.mp4", "First dance video", "video");
      const page = await signedIn(viewport, locale, host.token);
      await page.goto(`${g.base}/host`);
      await page.waitForSelector("[data-testid=pending-queue] [data-testid=approve]", { timeout: 15_000 });
      const badge = page.locator("[data-testid=pending-badge]");
      expect(await badge.textContent()).toBe("5");
      expect(await page.textContent("[data-testid=pending-live-badge]")).toBe("5");
      // Large previews (not thumbnails), caption and tags; the video plays in place.
      const width = await page
        .locator(".mod-media")
        .first()
        .evaluate((el) => el.getBoundingClientRect().width);
      expect(width).toBeGreaterThan(300);
      expect(await page.textContent(".mod-list")).toContain("Dance floor 0");
      expect(await page.textContent(".mod-list")).toContain("#party");
      const video = page.locator("[data-testid=pending-video]");
      expect(await video.getAttribute("controls")).not.toBeNull();
      await g.shot(page, `live-moderation-${viewport.width}-${locale}`);
      // Two selected, approved together.
      await page.locator("[data-testid=select]").nth(0).check();
      await page.locator("[data-testid=select]").nth(1).check();
      await page.click("[data-testid=approve-selected]");
      await page.waitForFunction(
        'document.querySelector("[data-testid=pending-badge]")?.textContent === "3"',
      );
      if (viewport === LAPTOP) {
        // Keyboard: the focused one (first) approved with A, then J moves on and X selects.
        await page.keyboard.press("a");
        await page.waitForFunction(
          'document.querySelector("[data-testid=pending-badge]")?.textContent === "2"',
        );
        await page.keyboard.press("j");
        await page.keyboard.press("x");
        expect(await page.locator(".mod-list li.selected").count()).toBe(1);
        expect(await page.isVisible(".mod-keys")).toBe(true);
      }
      // Everything else at once (after a confirmation).
      await page.click("[data-testid=approve-all]");
      await page.waitForSelector("[data-testid=pending-queue]", { state: "detached", timeout: 10_000 });
      expect(g.dialogs.at(-1)).toMatch(/\d/);
    }
    const feed = await api("GET", "/feed?limit=100", host.token);
    expect(feed.items.filter((i: { approval: string }) => i.approval === "pending")).toEqual([]);
    await api("PATCH", "/admin/config", admin, { premoderation: false });
  }, 180_000);

  it("shows a banned guest's notice as a warning and a long event name in full at 360 px", async () => {
    await api("PATCH", "/admin/config", admin, { event_name: LONG_NAME });
    const banned = await guest("Banned Live");
    await api("POST", `/host/users/${banned.user.id}/ban`, admin);
    for (const locale of ["en-US", "de-DE"]) {
      for (const viewport of [{ width: 360, height: 740 }, PHONE, LAPTOP]) {
        const page: Page = await signedIn(viewport, locale, banned.token);
        await page.goto(g.base);
        const notice = page.locator("[data-testid=banned-notice]");
        await notice.waitFor();
        expect(
          await page.evaluate(
            'getComputedStyle(document.querySelector("[data-testid=banned-notice]")).color',
          ),
        ).toBe("rgb(255, 181, 71)");
        const brand = page.locator("header.top .brand");
        expect(await brand.textContent()).toBe(LONG_NAME);
        // Not cut: no overflow hidden behind an ellipsis, and the whole box on screen.
        const fits = await page.evaluate(`(() => {
          const el = document.querySelector("header.top .brand");
          const r = el.getBoundingClientRect();
          return el.scrollWidth <= el.clientWidth + 1 && r.left >= 0 && r.right <= innerWidth + 0.5;
        })()`);
        expect(fits, `${viewport.width} ${locale}`).toBe(true);
        await g.shot(page, `live-banned-long-name-${viewport.width}-${locale}`);
      }
    }
  }, 120_000);
});
