import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderMemoriesHtml } from "../../src/export/memories.js";
import { ARTIFACTS } from "../web-dist.js";
import {
  adminLogin,
  axeCheck,
  type BrowserGallery,
  joinAs as joinAsKit,
  LAPTOP,
  PHONE,
  photoFile,
  startBrowserGallery,
} from "./browser-kit.js";

/**
 * Issue 14 in Chromium, at a phone (390×844) and a laptop (1366×900): the guest feed (photos
 * first, upload sheet, my uploads, download, share, header at 360 px in both languages), the
 * host page (pending queue with a live badge, promote/demote with confirmation, audit log), the
 * admin console (labels, validation, cover), the branded join page, the A6 QR card printed to
 * PDF, and an axe-core pass on every page. Screenshots land in .test-artifacts/ui-*.png.
 */
const PASSWORD = "ui admin password";

describe("hosts and guests in a browser", () => {
  let g: BrowserGallery;
  let base: string;
  let work: string;
  let dialogs: string[];

  beforeAll(async () => {
    g = await startBrowserGallery("ui", { GALLERY_ADMIN_PASSWORD: PASSWORD });
    ({ base, work, dialogs } = g);
  }, 120_000);
  afterAll(async () => {
    await g?.close();
  });

  const newPage = (viewport: { width: number; height: number }, locale = "en-US") =>
    g.newPage(viewport, locale);
  const shot = (page: Page, name: string, fullPage = false) => g.shot(page, `ui-${name}`, fullPage);

  const axe = axeCheck;
  const joinAs = (page: Page, name: string) => joinAsKit(g, page, name);
  const admin = (page: Page) => adminLogin(g, page, PASSWORD);
  const photo = (name: string, hue: number) => photoFile(g, name, hue);

  // A long timeout: what this walk took in a full run on a loaded machine is in the README (Tests).
  it("runs an event: branding, pre-moderation, promotion, download and share, the QR card", {
    timeout: 300_000,
  }, async () => {
    // ---- The admin brands the event and turns pre-moderation on, from the admin page.
    const host = await newPage(LAPTOP);
    await admin(host);
    await host.fill("#cfg-accent_color", "red");
    await host.click("[data-testid=save-config]");
    expect(await host.textContent("[data-testid=invalid-accent_color]")).toContain("#rrggbb");
    await host.fill("#cfg-event_name", "Anna & Ben's Wedding");
    await host.fill("#cfg-welcome_text_en", "Welcome! Share your best moments.");
    await host.fill("#cfg-welcome_text_de", "Willkommen! Teilt eure schönsten Momente.");
    await host.fill("#cfg-accent_color", "#2f7de1");
    await host.fill("#cfg-public_url", "https://wedding.example");
    await host.check("#cfg-premoderation");
    await host.click("[data-testid=save-config]");
    await host.waitForSelector("[role=status]:has-text('Saved.')");
    await host.locator("[data-testid=cover-input]").setInputFiles(await photo("cover.jpg", 40));
    await host.waitForSelector("[data-testid=cover-preview]", { timeout: 10_000 });
    expect(await host.isVisible("[data-testid=disk-bar]")).toBe(true);
    await shot(host, "admin-laptop", true);
    await axe(host, "admin");

    // ---- A guest on a phone sees the branded join page, joins; the photos come first.
    const ann = await newPage(PHONE);
    await ann.goto(`${base}/join`);
    await ann.waitForSelector("[data-testid=cover]");
    expect(await ann.textContent("[data-testid=event-name]")).toBe("Anna & Ben's Wedding");
    await ann.waitForSelector("text=Welcome! Share your best moments.");
    await shot(ann, "join-phone");
    await axe(ann, "join");
    await joinAs(ann, "Ann");
    const fab = await ann.locator("[data-testid=upload-fab]").boundingBox();
    expect(fab && fab.y + fab.height <= PHONE.height && fab.x + fab.width <= PHONE.width).toBe(true);
    expect(await ann.locator("input[name=caption], .sheet").count()).toBe(0);

    // The upload sheet: caption, hashtags, camera and library.
    await ann.click("[data-testid=upload-fab]");
    await ann.waitForSelector(".sheet [data-testid=camera]");
    expect(await ann.getAttribute(".sheet [data-testid=camera] input", "capture")).toBe("environment");
    await shot(ann, "upload-sheet-phone");
    await axe(ann, "upload sheet");
    await ann.fill(".sheet label:has-text('Caption') input", "First dance");
    await ann.fill(".sheet input[placeholder='#party #dance']", "#dance");
    const seenResponses: string[] = [];
    ann.on("response", async (r) => {
      if (r.url().includes("/api/v1/upload"))
        seenResponses.push(`${r.request().method()} ${r.status()} ${await r.text().catch(() => "")}`);
    });
    await ann.locator("[data-testid=file-input]").setInputFiles(await photo("dance.jpg", 200));
    await ann.waitForSelector(".q-done", { timeout: 20_000 }).catch(async (err) => {
      console.log("RESPONSES", seenResponses);
      await shot(ann, "queue-failure");
      throw new Error(`${err}: queue shows ${await ann.textContent("main")}`);
    });

    // The host's page shows the pending queue with a live badge (no reload).
    await host.click("header nav >> text=Host");
    await host.waitForSelector("[data-testid=pending-badge]", { timeout: 10_000 });
    const bob = await newPage(PHONE, "de-DE");
    await joinAs(bob, "Bob");
    await ann.click("header button.lang").catch(() => {});
    await ann.click("header button.lang").catch(() => {});

    // Pending: Ann sees it under "my uploads", marked; Bob sees nothing.
    await ann.click("[data-testid=mine]");
    await ann.waitForSelector(".tile [data-testid=pending]", { timeout: 10_000 }).catch(async (err) => {
      await shot(ann, "mine-failure");
      throw new Error(`${err}: page shows ${await ann.textContent("main")}`);
    });
    await shot(ann, "my-uploads-pending-phone");
    expect(await bob.locator(".tile").count()).toBe(0);

    // Host approves: Bob's feed gets the photo live.
    await host.waitForSelector("[data-testid=pending-queue] li", { timeout: 10_000 });
    await shot(host, "host-pending-laptop", true);
    await axe(host, "host");
    await host.click("[data-testid=pending-queue] [data-testid=approve]");
    await bob.waitForSelector(".tile", { timeout: 15_000 });
    await host.waitForSelector("[data-testid=pending-queue]", { state: "detached", timeout: 10_000 });

    // A second pending upload is rejected with a confirmation.
    await ann.click("[data-testid=upload-fab]");
    await ann.locator("[data-testid=file-input]").setInputFiles(await photo("blurry.jpg", 90));
    await ann.waitForSelector(".q-done >> nth=1", { timeout: 20_000 });
    await host.waitForSelector("[data-testid=pending-queue] [data-testid=reject]", { timeout: 10_000 });
    await host.click("[data-testid=pending-queue] [data-testid=reject]");
    expect(dialogs.at(-1)).toMatch(/Reject this upload/);
    await host.waitForSelector("[data-testid=pending-queue]", { state: "detached", timeout: 10_000 });
    await ann.waitForFunction("document.querySelectorAll('.tile').length === 1", null, { timeout: 10_000 });

    // Promote Bob to host and back, with confirmations; the audit log reads as sentences.
    await host.click("tr[data-name=Bob] [data-testid=promote]");
    expect(dialogs.at(-1)).toMatch(/Make Bob a host\?/);
    await host.waitForSelector("tr[data-name=Bob] .role-host");
    await bob.reload();
    // On a phone the page links sit in the header menu.
    await bob.click("[data-testid=menu]");
    await bob.waitForSelector("header nav >> text=Gastgeber", { timeout: 10_000 });
    await host.click("tr[data-name=Bob] [data-testid=demote]");
    await host.waitForSelector("tr[data-name=Bob] .role-guest");
    await host.waitForSelector("[data-testid=audit] li:has-text('made host Bob')");
    await host.waitForSelector("[data-testid=audit] li:has-text('approved an upload')");
    await shot(host, "host-laptop", true);

    // Bob (German) opens the photo: download the original, share through the system sheet.
    await bob.reload();
    await bob.waitForSelector(".tile");
    await bob.evaluate(`(() => {
      window.__shared = [];
      navigator.canShare = () => true;
      navigator.share = async (data) => { window.__shared.push({ files: (data.files || []).map(f => f.name + ':' + f.type), text: data.text }); };
    })()`);
    await bob.locator(".tile").first().click();
    await bob.waitForSelector(".lightbox [data-testid=download]");
    const [download] = await Promise.all([
      bob.waitForEvent("download"),
      bob.click(".lightbox [data-testid=download]"),
    ]);
    expect(download.suggestedFilename()).toMatch(/^Ann_\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d\.jpg$/);
    const saved = join(work, "downloaded.jpg");
    await download.saveAs(saved);
    expect((await sharp(saved).metadata()).width).toBe(1200);
    await bob.click(".lightbox [data-testid=share]");
    await bob.waitForFunction("window.__shared.length === 1");
    const shared = (await bob.evaluate("window.__shared")) as { files: string[]; text: string }[];
    expect(shared[0]?.files[0]).toMatch(/\.jpg:image\/jpeg$/);
    expect(shared[0]?.text).toBe("First dance");
    await shot(bob, "lightbox-de-phone");
    await bob.keyboard.press("Escape");
    await shot(bob, "feed-de-phone");
    await axe(bob, "feed (de)");

    // The header fits 360 px in both languages (Bob is German, Ann English).
    for (const page of [ann, bob]) {
      await page.setViewportSize({ width: 360, height: 740 });
      const box = await page.locator("header.top").boundingBox();
      expect(box!.height).toBeLessThan(64);
      expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(360);
    }
    await shot(bob, "header-360-de");
    await shot(ann, "header-360-en");

    // Laptop views of the feed and the join page.
    const carl = await newPage(LAPTOP);
    await joinAs(carl, "Carl");
    await carl.waitForSelector(".tile");
    await shot(carl, "feed-laptop");

    // ---- The QR card: the public URL, A6, printed by Chromium to a one-page PDF.
    await host.click("text=Printable QR card");
    await host.waitForSelector("[data-testid=qr-card] svg");
    expect(await host.textContent("[data-testid=qr-card] .url")).toContain("wedding.example/join");
    await shot(host, "qr-card-laptop");
    const pdf = join(ARTIFACTS, "ui-qr-card.pdf");
    await host.emulateMedia({ media: "print" });
    await host.pdf({ path: pdf, preferCSSPageSize: true, printBackground: true });
    await host.emulateMedia({ media: "screen" });
    const info = execFileSync("pdfinfo", [pdf]).toString();
    expect(info).toMatch(/Pages:\s+1\n/);
    // A6 is 297.64 × 419.53 pt.
    expect(info).toMatch(/Page size:\s+29[78](\.\d+)? x 4(19|20)(\.\d+)? pts/);
    execFileSync("pdftoppm", ["-png", "-r", "100", "-singlefile", pdf, join(ARTIFACTS, "ui-qr-card-print")]);
    const printed = await sharp(join(ARTIFACTS, "ui-qr-card-print.png")).metadata();
    expect(printed.width).toBeLessThan(printed.height ?? 0);

    // ---- The keepsake estimate stays right after the release.
    await host.goto(`${base}/host`);
    await host.click("[data-testid=release]");
    await host.waitForSelector("[data-testid=export-zip]:has-text('ready')", { timeout: 60_000 });
    await host.waitForSelector("[data-testid=export-html]:has-text('ready')", { timeout: 60_000 });
    await host.reload();
    await host.waitForSelector("[data-testid=estimate]");
    expect(await host.textContent("[data-testid=estimate]")).not.toMatch(/^0 B$/);
    await shot(host, "host-released-laptop", true);
    await shot(ann, "feed-phone");
  });

  // Two Chromium pages with axe checks (the README, Tests, says what this took on a loaded machine).
  it("the Memories viewer opens offline in the reader's language with the branding", {
    timeout: 120_000,
  }, async () => {
    const dir = join(work, "memories");
    mkdirSync(join(dir, "media"), { recursive: true });
    const img = await sharp({
      create: { width: 600, height: 400, channels: 3, background: { r: 240, g: 160, b: 60 } },
    })
      .jpeg()
      .toBuffer();
    writeFileSync(join(dir, "media", "a.jpg"), img);
    writeFileSync(join(dir, "cover.jpg"), img);
    const html = renderMemoriesHtml(
      {
        name: "Anna & Ben's Wedding",
        welcome_text_en: "Thank you for celebrating with us!",
        welcome_text_de: "Danke, dass ihr mit uns gefeiert habt!",
        accent_color: "#2f7de1",
        cover: "cover.jpg",
        time_zone: "Europe/Berlin",
      },
      [
        {
          id: "a",
          uploader: "Ann",
          caption: "First dance",
          hashtags: ["dance"],
          media_type: "image",
          created_at: "2026-06-14T16:05:00.000Z",
          media: "media/a.jpg",
          still: "media/a.jpg",
          comments: [{ author: "Bob", text: "Wow", created_at: "2026-06-14T16:06:00.000Z" }],
        },
      ],
    );
    writeFileSync(join(dir, "index.html"), html);
    for (const [locale, viewport, expected] of [
      ["de-DE", PHONE, "Danke, dass ihr mit uns gefeiert habt!"],
      ["en-US", LAPTOP, "Thank you for celebrating with us!"],
    ] as const) {
      const page = await newPage(viewport, locale);
      await page.context().setOffline(true);
      await page.goto(`file://${join(dir, "index.html")}`);
      expect(await page.locator("header .welcome").innerText()).toBe(expected);
      expect(await page.locator("figure .when").innerText()).toMatch(/18:05/);
      await shot(page, `memories-${locale}`);
      await axe(page, `memories ${locale}`);
    }
  });
});
