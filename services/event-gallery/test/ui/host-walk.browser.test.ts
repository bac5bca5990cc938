import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SERVICE_ROOT } from "../web-dist.js";
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
 * Issue 14, "done when": a whole event run in Chromium without touching the API. The admin sets
 * the public address and pre-moderation, invites (QR and link), promotes a co-host who moderates
 * from a phone in German (approve, reject, ban and unban with confirmations), sees the upload the
 * pipeline gave up on in the failed-uploads table, releases, and a German guest downloads the
 * Memories viewer in German. Along the way: keyboard focus order and visible focus on the feed
 * and the host page, the header menu at 360 px in both languages, and no English left on the
 * German host page. Screenshots: .test-artifacts/walk-*.png.
 */
const PASSWORD = "walk admin password";

/** `key: "value"` pairs of one language block of web/src/i18n.ts. */
function dictionary(lang: "en" | "de"): Map<string, string> {
  const src = readFileSync(join(SERVICE_ROOT, "web/src/i18n.ts"), "utf8");
  const start = src.indexOf(lang === "en" ? "const en = {" : "const de: Dict = {");
  const block = src.slice(start, src.indexOf("\n};", start));
  const out = new Map<string, string>();
  for (const m of block.matchAll(/^\s+(\w+):\s*\n?\s*"((?:[^"\\]|\\.)*)",?$/gm)) out.set(m[1]!, m[2]!);
  return out;
}

/** Tab through the page; each stop: a label and whether a focus outline is drawn. */
async function tabStops(page: Page, count: number) {
  await page.evaluate("document.activeElement && document.activeElement.blur()");
  await page.evaluate("window.scrollTo(0, 0)");
  const stops: { label: string; visible: boolean }[] = [];
  for (let i = 0; i < count; i++) {
    await page.keyboard.press("Tab");
    stops.push(
      (await page.evaluate(`(() => {
        const el = document.activeElement;
        if (!el || el === document.body) return { label: "<body>", visible: false };
        const cs = getComputedStyle(el);
        const label = (el.getAttribute("data-testid") ? "#" + el.getAttribute("data-testid") + " " : "") +
          ((el.getAttribute("aria-label") || el.innerText || el.getAttribute("placeholder") || el.tagName) + "").trim().replace(/\\s+/g, " ").slice(0, 40);
        return { label, visible: cs.outlineStyle !== "none" && parseFloat(cs.outlineWidth) >= 2 };
      })()`)) as { label: string; visible: boolean },
    );
  }
  return stops;
}

/** `expected` appear in `labels` in this order (other stops may sit between them). */
function inOrder(labels: string[], expected: (string | RegExp)[]) {
  let at = 0;
  for (const want of expected) {
    const found = labels.findIndex(
      (l, i) => i >= at && (typeof want === "string" ? l.includes(want) : want.test(l)),
    );
    expect(found, `${want} after stop ${at} in ${JSON.stringify(labels)}`).toBeGreaterThanOrEqual(0);
    at = found + 1;
  }
}

describe("a host runs a whole event in the browser", () => {
  let g: BrowserGallery;
  beforeAll(async () => {
    g = await startBrowserGallery("walk", { GALLERY_ADMIN_PASSWORD: PASSWORD });
  }, 120_000);
  afterAll(async () => {
    await g?.close();
  });

  it("invite, moderate, promote a co-host, release; keyboard order; menu at 360 px; German throughout", {
    timeout: 240_000,
  }, async () => {
    // ---- The admin: public address and pre-moderation, from the admin page.
    const admin = await g.newPage(LAPTOP);
    await adminLogin(g, admin, PASSWORD);
    await admin.fill("#cfg-public_url", "https://party.example");
    await admin.check("#cfg-premoderation");
    await admin.click("[data-testid=save-config]");
    await admin.waitForSelector("[role=status]:has-text('Saved.')");

    // ---- Invite: the host page shows the QR and the public link.
    await admin.click("header nav >> text=Host");
    await admin.waitForSelector("[data-testid=qr]");
    expect(await admin.textContent("[data-testid=join-link]")).toBe("https://party.example/join");

    // ---- Guests join on their phones: Carla in German, Dan in English.
    const carla = await g.newPage(PHONE, "de-DE");
    await joinAs(g, carla, "Carla");
    const dan = await g.newPage(PHONE);
    await joinAs(g, dan, "Dan");

    // ---- Promote Carla to co-host (with a confirmation).
    await admin.reload();
    await admin.click("tr[data-name=Carla] [data-testid=promote]");
    expect(g.dialogs.at(-1)).toBe("Make Carla a host? Hosts can remove photos, ban guests and reset PINs.");
    await admin.waitForSelector("tr[data-name=Carla] .role-host");
    // Carla reaches the host page through the header menu of her phone.
    await carla.reload();
    await carla.click("[data-testid=menu]");
    await carla.click("header nav >> text=Gastgeber");
    await carla.waitForSelector("main.host h1");

    // ---- Dan uploads: a photo, another one, and a file that only looks like a JPEG.
    const uploadFile = async (file: string, done: number) => {
      await dan.click("[data-testid=upload-fab]");
      await dan.locator("[data-testid=file-input]").setInputFiles(file);
      await dan.waitForSelector(`.q-done >> nth=${done - 1}`, { timeout: 30_000 });
    };
    await uploadFile(await photoFile(g, "dance.jpg", 200), 1);
    await uploadFile(await photoFile(g, "blurry.jpg", 60), 2);
    const broken = join(g.work, "broken.jpg");
    writeFileSync(broken, Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(4000, 0x5a)]));
    const gaveUp = new Promise<string>((resolve) => {
      const off = g.built.ctx.bus.subscribe((event, data) => {
        if (event === "upload-removed" && typeof data.id === "string") {
          off();
          resolve(data.id);
        }
      });
    });
    await uploadFile(broken, 3);
    // The pipeline gives up on it after three attempts (before the hosts look at the queue).
    const failedId = await gaveUp;

    // ---- Carla moderates from her phone, in German: approve one, reject one.
    await carla.waitForSelector("[data-testid=pending-queue] li >> nth=1", { timeout: 15_000 });
    await g.shot(carla, "walk-host-pending-phone-de", true);
    await carla.locator("[data-testid=pending-queue] [data-testid=approve]").first().click();
    await carla.waitForFunction("document.querySelectorAll('[data-testid=pending-queue] li').length === 1");
    await carla.click("[data-testid=pending-queue] [data-testid=reject]");
    expect(g.dialogs.at(-1)).toBe("Diesen Upload ablehnen? Er wird endgültig entfernt.");
    await carla.waitForSelector("[data-testid=pending-queue]", { state: "detached", timeout: 10_000 });
    // Ban and unban Dan (the ban asks first).
    await carla.click("tr[data-name=Dan] [data-testid=ban]");
    expect(g.dialogs.at(-1)).toMatch(/^Dan sperren\?/);
    await carla.waitForSelector("tr[data-name=Dan].banned");
    await carla.click("tr[data-name=Dan] >> text=Entsperren");
    await carla.waitForSelector("tr[data-name=Dan]:not(.banned)");
    await carla.waitForSelector("[data-testid=audit] li:has-text('hat gesperrt: Dan')");
    await carla.waitForSelector("[data-testid=audit] li:has-text('hat einen Upload abgelehnt')");
    // Counts follow the plural rules ("1 Upload", "2 Uploads"; never "1 Uploads").
    expect(await carla.textContent("tr[data-name=Dan] td.muted")).toMatch(
      /^(1 Upload|(0|[2-9]|\d\d+) Uploads)$/,
    );
    await g.shot(carla, "walk-host-phone-de", true);

    // No English left on Carla's German host page.
    const en = dictionary("en");
    const de = dictionary("de");
    const englishOnly = new Set(
      [...en].filter(([k, v]) => de.get(k) !== v && v.length > 3 && !v.includes("{")).map(([, v]) => v),
    );
    expect(englishOnly.size).toBeGreaterThan(150);
    const texts = (await carla.evaluate(`(() => {
      const out = [];
      const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
      for (let n = walk.nextNode(); n; n = walk.nextNode()) if (n.textContent.trim()) out.push(n.textContent.trim());
      for (const el of document.querySelectorAll("[aria-label],[title],[placeholder]"))
        for (const a of ["aria-label", "title", "placeholder"]) if (el.getAttribute(a)) out.push(el.getAttribute(a));
      return out;
    })()`)) as string[];
    expect(texts.filter((s) => englishOnly.has(s))).toEqual([]);

    // ---- The admin sees the upload the pipeline gave up on, as a table row with the reason.
    await admin.goto(`${g.base}/admin`);
    await admin.waitForSelector(`[data-testid=failed-table] tr[data-id="${failedId}"]`);
    const row = await admin.textContent(`[data-testid=failed-table] tr[data-id="${failedId}"]`);
    expect(row).toContain("Dan");
    expect(row).toContain("image/jpeg");
    expect(await admin.textContent("main.admin")).toContain("The API offers no retry");
    await admin.locator("[data-testid=failed-table]").scrollIntoViewIfNeeded();
    await g.shot(admin, "walk-admin-failed-laptop");
    await axeCheck(admin, "admin with failed uploads");
    await admin.setViewportSize(PHONE);
    await admin.locator("[data-testid=failed-table]").scrollIntoViewIfNeeded();
    await g.shot(admin, "walk-admin-failed-phone");
    await admin.setViewportSize(LAPTOP);

    // ---- Keyboard: the guest feed (phone) and the host page (laptop) in a sensible order,
    // every stop with a visible focus outline.
    await dan.goto(`${g.base}/`);
    await dan.waitForSelector(".tile");
    const feedStops = await tabStops(dan, 16);
    inOrder(
      feedStops.map((s) => s.label),
      [
        "#menu",
        /DE: /,
        "Log out",
        "#tab-photos",
        "#tab-guestbook",
        "All",
        "#mine",
        "#favorites",
        "#highlights",
        "#uploader-filter",
        "Filter by #tag",
        "#upload-fab",
        "Dan",
      ],
    );
    expect(feedStops.filter((s) => !s.visible && s.label !== "<body>")).toEqual([]);
    await g.shot(dan, "walk-feed-focus-phone");

    await admin.goto(`${g.base}/host`);
    await admin.waitForSelector("tr[data-name=Dan]");
    const hostStops = await tabStops(admin, 18);
    inOrder(
      hostStops.map((s) => s.label),
      [
        "Feed",
        "Slideshow",
        "Host",
        "Admin",
        /DE: /,
        "Log out",
        "Printable QR card",
        "Lock uploads",
        "#release",
        "#demote",
        "#ban",
      ],
    );
    expect(hostStops.filter((s) => !s.visible && s.label !== "<body>")).toEqual([]);
    await g.shot(admin, "walk-host-focus-laptop");

    // ---- The header at 360 px: every page reachable through the menu, in both languages.
    for (const [page, links] of [
      [carla, ["Feed", "Diashow", "Gastgeber"]],
      [admin, ["Feed", "Slideshow", "Host", "Admin"]],
    ] as const) {
      await page.setViewportSize({ width: 360, height: 740 });
      await page.goto(`${g.base}/`);
      await page.waitForSelector("[data-testid=menu]");
      expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(360);
      expect((await page.locator("header.top").boundingBox())!.height).toBeLessThan(64);
      await page.click("[data-testid=menu]");
      for (const text of links) {
        const box = await page.locator(`header nav a:text-is("${text}")`).boundingBox();
        expect(box, text).not.toBeNull();
        expect(box!.x + box!.width).toBeLessThanOrEqual(360);
      }
      await g.shot(page, `walk-menu-360-${page === carla ? "de" : "en"}`);
      await axeCheck(page, "open header menu");
      await page.keyboard.press("Escape");
      await page.waitForSelector("header nav.open", { state: "detached" });
    }
    await admin.setViewportSize(LAPTOP);

    // ---- Release (asks first); the keepsake gets built.
    await admin.goto(`${g.base}/host`);
    await admin.click("[data-testid=release]");
    expect(g.dialogs.at(-1)).toMatch(/^Release the gallery\?/);
    await admin.waitForSelector("[data-testid=export-html]:has-text('ready')", { timeout: 60_000 });
    await g.shot(admin, "walk-released-laptop", true);

    // ---- Carla (German) downloads the Memories viewer: the download asks for German.
    await carla.setViewportSize(PHONE);
    await carla.goto(`${g.base}/`);
    await carla.waitForSelector("[data-testid=dl-html]", { timeout: 15_000 });
    const [request] = await Promise.all([
      carla.waitForRequest((r) => r.url().includes("/export/html/download")),
      carla.click("[data-testid=dl-html]"),
    ]);
    expect(new URL(request.url()).searchParams.get("lang")).toBe("de");
    const response = await request.response();
    expect(response?.status()).toBe(200);
    await g.shot(carla, "walk-keepsake-phone-de");
  });
});
