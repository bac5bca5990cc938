import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemClock } from "@app/kit/clock";
import { launchChromium } from "@app/kit/testing/browser";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gallery, noiseJpeg, startGallery } from "../media/helpers.js";
import { ARTIFACTS, ensureWebBuilt } from "../web-dist.js";
import { sha } from "./tus.js";

describe("the upload queue in Chromium", () => {
  let g: Gallery;
  let base: string;
  let browser: Browser;
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    await ensureWebBuilt();
    g = await startGallery({ deps: { clock: systemClock } });
    base = await g.built.app.listen({ port: 0, host: "127.0.0.1" });
    browser = await launchChromium();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await g?.close();
  });

  it("pauses when the network is cut mid-upload and finishes on its own when it returns", async () => {
    // 24 MB: a real JPEG with random bytes after its end (still sniffed and decoded as a JPEG).
    const file = join(tmpdir(), `queue-${process.pid}.jpg`);
    const bytes = Buffer.concat([await noiseJpeg(64, 64), Buffer.alloc(24 * 1024 * 1024, 7)]);
    await writeFile(file, bytes);
    const { token } = await g.join("Offline");

    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await page.goto(`${base}/`);
    await page.evaluate(`localStorage.setItem("gallery.token", ${JSON.stringify(token)})`);
    await page.goto(`${base}/`);
    const cdp = await ctx.newCDPSession(page);
    await cdp.send("Network.enable");
    // Slow enough (8 MB/s up) that the cut lands mid-way through the file.
    const throttle = (offline: boolean) =>
      cdp.send("Network.emulateNetworkConditions", {
        offline,
        latency: 5,
        downloadThroughput: 8 * 1024 * 1024,
        uploadThroughput: 8 * 1024 * 1024,
      });
    await throttle(false);
    await page.click("[data-testid=upload-fab]");
    await page.locator("[data-testid=file-input]").setInputFiles(file);

    // Wait until the server holds at least one acknowledged chunk, then cut the network.
    const partials = join(g.dataDir, "partials");
    const held = async () => {
      const [name] = existsSync(partials) ? readdirSync(partials) : [];
      return name ? (await stat(join(partials, name))).size : 0;
    };
    await expect.poll(held, { timeout: 30_000, interval: 50 }).toBeGreaterThan(8 * 1024 * 1024);
    await throttle(true);
    await expect.poll(() => page.locator(".q-waiting").count(), { timeout: 30_000 }).toBe(1);
    const atCut = await held();
    expect(atCut).toBeLessThan(bytes.length);
    await page.screenshot({ path: join(ARTIFACTS, "queue-offline.png") });

    // The network returns: no click, the queue resumes from the server's offset and finishes.
    await throttle(false);
    await expect.poll(() => page.locator(".q-done").count(), { timeout: 90_000 }).toBe(1);
    await page.screenshot({ path: join(ARTIFACTS, "queue-done.png") });

    const rows = await g.built.ctx.database.db.selectFrom("uploads").selectAll().execute();
    expect(rows).toHaveLength(1);
    const stored = await readFile(join(g.built.ctx.paths.mediaDir, rows[0]?.original_path as string));
    expect(sha(stored)).toBe(sha(bytes));
    // Nothing left behind: no partial, no IndexedDB entry.
    expect(readdirSync(partials)).toEqual([]);
    // Evaluated in the page (a string: this file is type-checked without the DOM library).
    const left = await page.evaluate(`new Promise((resolve) => {
      const req = indexedDB.open("gallery-uploads", 1);
      req.onsuccess = () => {
        const r = req.result.transaction("queue").objectStore("queue").count();
        r.onsuccess = () => resolve(r.result);
      };
    })`);
    expect(left).toBe(0);
    await ctx.close();
    execFileSync("rm", ["-f", file]);
  }, 180_000);
});
