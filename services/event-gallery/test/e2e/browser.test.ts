import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Browser, Page } from "playwright-core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BuiltApp } from "../../src/app.js";
import { type BrowserGallery, startBrowserGallery } from "../ui/browser-kit.js";

/**
 * The whole app in headless Chromium against a real listening server: two guests, live feed,
 * like + comment, host takedown and ban, release, both keepsakes downloaded, and Memories.zip's
 * index.html opened from disk with the network off.
 */
const PASSWORD = "e2e admin password";

describe("gallery in a browser", () => {
  let g: BrowserGallery;
  let base: string;
  let browser: Browser;
  let built: BuiltApp;
  let work: string;
  let dialogs: string[];

  beforeAll(async () => {
    g = await startBrowserGallery("e2e", { GALLERY_ADMIN_PASSWORD: PASSWORD });
    ({ base, browser, built, work, dialogs } = g);
  }, 120_000);
  afterAll(async () => {
    await g?.close();
  });

  /** A phone (390×800, touch) or Playwright's default desktop window. */
  const newPage = (opts: { mobile?: boolean } = {}): Promise<Page> =>
    g.newPage(opts.mobile ? { width: 390, height: 800 } : { width: 1280, height: 720 });
  /** A horizontal swipe on `selector` (dx < 0: to the left, i.e. "next"). */
  const swipe = (page: Page, selector: string, dx: number) =>
    page.evaluate(`(() => {
      const el = document.querySelector(${JSON.stringify(selector)});
      const at = (x) => new Touch({ identifier: 1, target: el, clientX: x, clientY: 200 });
      el.dispatchEvent(new TouchEvent("touchstart", { touches: [at(300)], changedTouches: [at(300)], bubbles: true }));
      el.dispatchEvent(new TouchEvent("touchend", { touches: [], changedTouches: [at(300 + ${dx})], bubbles: true }));
    })()`);
  const shot = (page: Page, name: string) => g.shot(page, name);

  const join_ = async (page: Page, name: string) => {
    await page.goto(`${base}/join`);
    await page.fill("input[name=name]", name);
    await page.click("button[type=submit]");
    const pin = await page.textContent("[data-testid=pin]", { timeout: 10_000 });
    expect(pin?.trim()).toMatch(/^\d{4}$/);
    return pin!.trim();
  };

  // A long timeout: what this walk took in a full run on a loaded machine is in the README (Tests).
  it("runs the guest, host and keepsake flows end to end", { timeout: 240_000 }, async () => {
    const anna = await newPage({ mobile: true });
    const ben = await newPage();
    const host = await newPage();

    await join_(anna, "Anna");
    await shot(anna, "join-pin");
    await anna.click("text=I wrote it down");
    await join_(ben, "Ben");
    await ben.click("text=I wrote it down");
    await ben.waitForSelector(".dot.on", { timeout: 10_000 });
    await anna.waitForSelector(".dot.on", { timeout: 10_000 });

    // Anna uploads two real photos; Ben sees them appear live.
    const photo = (hue: number) =>
      sharp({ create: { width: 800, height: 600, channels: 3, background: { r: hue, g: 90, b: 200 } } })
        .jpeg()
        .toBuffer();
    const keep = join(work, "lake.jpg");
    const gone = join(work, "oops.jpg");
    writeFileSync(keep, await photo(30));
    writeFileSync(gone, await photo(220));
    const later = join(work, "later.jpg");
    writeFileSync(later, await photo(120));
    const dance = join(work, "dance.mp4");
    execFileSync("/usr/bin/ffmpeg", [
      ...["-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=10:duration=1"],
      ...["-pix_fmt", "yuv420p", "-y", dance],
    ]);
    await anna.click("[data-testid=upload-fab]");
    await anna.fill(".upload label:has-text('Caption') input", "Sunset at the lake");
    await anna.fill("input[placeholder='#party #dance']", "#party");
    await anna.locator("[data-testid=file-input]").setInputFiles([keep]);
    await anna.waitForSelector(".q-done", { timeout: 20_000 });
    await anna.click("[data-testid=upload-fab]");
    await anna.fill(".upload label:has-text('Caption') input", "Oops");
    await anna.locator("[data-testid=file-input]").setInputFiles([gone]);
    await anna.waitForSelector(".q-done >> nth=1", { timeout: 20_000 });
    await shot(anna, "feed-upload");
    await ben.waitForSelector(".tile >> nth=1", { timeout: 15_000 });
    expect(await ben.locator(".tile").count()).toBe(2);

    // Ben likes and comments on the older photo (the last tile).
    await ben.locator(".tile").last().click();
    await ben.click(".lightbox .like");
    await ben.waitForSelector(".lightbox .like.on");
    await ben.fill(".lightbox input[placeholder='Write a comment…']", "Beautiful lake!");
    await ben.click(".lightbox button[type=submit]");
    await ben.waitForSelector(".lightbox .comments li:has-text('Beautiful lake!')");
    await shot(ben, "lightbox");
    await ben.keyboard.press("Escape");

    // The admin signs in (token in sessionStorage only), takes down the newer photo, bans Ben.
    await host.goto(`${base}/admin`);
    await host.fill("input[type=password]", PASSWORD);
    await host.click("button[type=submit]");
    await host.waitForSelector("text=Configuration", { timeout: 10_000 });
    expect(await host.evaluate("sessionStorage.getItem('gallery.admin')")).toBeTruthy();
    expect(await host.evaluate("localStorage.getItem('gallery.token')")).toBeNull();
    await shot(host, "admin");
    await host.click("header nav >> text=Feed");
    await host.locator(".tile:has-text('Oops')").click();
    await host.click("[data-testid=takedown]");
    await anna.waitForFunction("document.querySelectorAll('.tile').length === 1", null, { timeout: 10_000 });
    await host.click("header nav >> text=Host");
    await host.waitForSelector("[data-testid=qr]");
    await host.locator("tr[data-name=Ben] [data-testid=ban]").click();
    await host.waitForSelector("tr.banned[data-name=Ben]");

    // Ben's connection drops while Anna posts a video; after the reconnect his feed catches up
    // through /feed/delta. A video's lightbox plays the original.
    await ben.context().setOffline(true);
    // Drop every open connection (a network blip); Ben cannot come back while offline.
    built.app.server.closeAllConnections();
    await ben.waitForSelector(".dot:not(.on)", { timeout: 10_000 });
    await anna.waitForSelector(".dot.on", { timeout: 10_000 });
    await anna.click("[data-testid=upload-fab]");
    await anna.fill(".upload label:has-text('Caption') input", "Dance video");
    await anna.locator("[data-testid=file-input]").setInputFiles([dance]);
    await anna.waitForSelector(".q-done >> nth=2", { timeout: 20_000 });
    await anna.locator(".tile:has-text('Dance video')").click({ timeout: 10_000 });
    expect(await anna.getAttribute(".lightbox video", "src", { timeout: 10_000 })).toMatch(
      /^\/api\/v1\/upload\/[0-9a-f-]+\/original\?t=/,
    );
    await anna.keyboard.press("Escape");
    await ben.context().setOffline(false);
    await ben.waitForSelector(".dot.on", { timeout: 15_000 });
    await ben.waitForSelector(".tile:has-text('Dance video')", { timeout: 10_000 });

    // Uploads locked: Anna's file waits in the IndexedDB queue, survives a reload, and goes up on
    // its own when the event reopens.
    await host.click("text=Lock uploads");
    await anna.waitForSelector("text=Uploads are closed right now.", { timeout: 10_000 });
    await anna.click("[data-testid=upload-fab]");
    await anna.fill(".upload label:has-text('Caption') input", "After the break");
    await anna.locator("[data-testid=file-input]").setInputFiles([later]);
    await anna.waitForSelector(".q-locked", { timeout: 10_000 });
    await anna.reload();
    await anna.waitForSelector(".q-locked", { timeout: 10_000 });
    await shot(anna, "queue-locked");
    await host.click("text=Unlock uploads");
    await anna.waitForSelector(".q-done", { timeout: 20_000 });
    await anna.waitForFunction("document.querySelectorAll('.tile').length === 3", null, { timeout: 10_000 });
    // Swiping in the lightbox moves to the next upload (newest first: the photo, then the video).
    await anna.locator(".tile").first().click();
    await anna.waitForSelector(".lightbox img");
    await swipe(anna, ".lightbox", -150);
    await anna.waitForSelector(".lightbox video", { timeout: 5_000 });
    await swipe(anna, ".lightbox", 150);
    await anna.waitForSelector(".lightbox img", { timeout: 5_000 });
    await anna.keyboard.press("Escape");
    // Anna edits her own upload's hashtags.
    await anna.locator(".tile:has-text('Sunset at the lake')").click();
    await anna.click(".lightbox >> text=Edit");
    await anna.fill(".lightbox input[aria-label='Hashtags (space separated)']", "party lake");
    await anna.click(".lightbox >> text=Save");
    await anna.waitForSelector(".lightbox .tags >> text=#lake", { timeout: 5_000 });
    await anna.keyboard.press("Escape");
    await shot(host, "host");

    // Release; the host watches both archives build.
    await host.click("[data-testid=release]");
    await host.waitForFunction(
      `["zip", "html"].every((k) => document.querySelector("[data-testid=export-" + k + "]")?.textContent === "ready")`,
      null,
      { timeout: 30_000 },
    );
    await shot(host, "host-released");

    // Anna downloads both keepsakes through the hidden frame.
    await anna.waitForSelector("[data-testid=dl-zip]", { timeout: 15_000 });
    const files: Record<string, string> = {};
    for (const kind of ["zip", "html"]) {
      const [download] = await Promise.all([
        anna.waitForEvent("download"),
        anna.click(`[data-testid=dl-${kind}]`),
      ]);
      const path = join(work, download.suggestedFilename());
      await download.saveAs(path);
      files[kind] = path;
    }
    expect(Object.values(files).map((p) => p.split("/").pop())).toEqual(["Gallery.zip", "Memories.zip"]);
    const names = execFileSync("unzip", ["-Z1", files.zip!], { encoding: "utf8" }).trim().split("\n");
    expect(names).toHaveLength(3);
    for (const n of names) expect(n).toMatch(/^Anna\/.+\.(jpg|mp4)$/);
    expect(names.filter((n) => n.endsWith(".mp4"))).toHaveLength(1);

    // Memories.zip opened from disk, offline.
    const unpacked = join(work, "memories");
    execFileSync("unzip", ["-q", files.html!, "-d", unpacked]);
    // Closed by the kit's close() with the browser.
    const offline = await browser.newContext({ offline: true, hasTouch: true });
    const viewer = await offline.newPage();
    const requests: string[] = [];
    viewer.on("request", (r) => {
      if (!r.url().startsWith("file:")) requests.push(r.url());
    });
    await viewer.goto(pathToFileURL(join(unpacked, "index.html")).href);
    await viewer.waitForSelector("figure");
    expect(await viewer.locator("figure").count()).toBe(3);
    expect(await viewer.textContent("figure figcaption")).toContain("Anna");
    expect(await viewer.locator("figure .caption").allTextContents()).toEqual([
      "Sunset at the lake",
      "Dance video",
      "After the break",
    ]);
    expect(await viewer.textContent(".tags")).toBe("#lake #party");
    // Ben is banned: his comment is hidden in the keepsake too.
    expect(await viewer.locator(".comments").count()).toBe(0);
    const loaded = await viewer.evaluate(
      "[...document.images].every((img) => img.complete && img.naturalWidth > 0)",
    );
    expect(loaded).toBe(true);
    const media = await viewer
      .locator("figure")
      .evaluateAll((fs) => fs.map((f) => f.getAttribute("data-media")));
    await viewer.locator("figure .media").first().click();
    await viewer.waitForSelector("#lb.open img");
    expect(await viewer.getAttribute("#lb img", "src")).toBe(media[0]);
    await viewer.keyboard.press("ArrowRight");
    expect(await viewer.getAttribute("#lb video", "src")).toBe(media[1]);
    expect(media[1]).toMatch(/^media\/.+\.mp4$/);
    await viewer.keyboard.press("ArrowRight");
    expect(await viewer.getAttribute("#lb img", "src")).toBe(media[2]);
    expect(await viewer.textContent("#lb .info")).toContain("After the break");
    await viewer.keyboard.press("ArrowLeft");
    await viewer.keyboard.press("ArrowLeft");
    expect(await viewer.getAttribute("#lb img", "src")).toBe(media[0]);
    await swipe(viewer, "#lb", -150);
    expect(await viewer.getAttribute("#lb video", "src")).toBe(media[1]);
    await swipe(viewer, "#lb", 150);
    expect(await viewer.getAttribute("#lb img", "src")).toBe(media[0]);
    await viewer.keyboard.press("Escape");
    expect(await viewer.locator("#lb.open").count()).toBe(0);
    expect(requests).toEqual([]);
    await shot(viewer, "memories-offline");

    // The slideshow shows the remaining photos full screen.
    await ben.goto(`${base}/slideshow`);
    await ben.waitForSelector(".slideshow img", { timeout: 10_000 });
    expect(await ben.textContent(".slideshow figcaption")).toContain("Anna");
    await shot(ben, "slideshow");

    // Reopening warns first, then withdraws the keepsake for everyone.
    await host.click("[data-testid=reopen]");
    expect(dialogs.at(-1)).toMatch(/withdraws the keepsake/);
    await host.waitForSelector("[data-testid=release]");
    await anna.waitForSelector("[data-testid=dl-zip]", { state: "detached", timeout: 10_000 });

    // The language switch.
    await anna.click("header button.lang");
    await anna.waitForSelector("header button.logout[aria-label=Abmelden]");
    await shot(anna, "feed-de");
  });
});
