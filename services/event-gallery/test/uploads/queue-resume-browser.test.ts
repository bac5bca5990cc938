import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemClock } from "@app/kit/clock";
import { launchChromium } from "@app/kit/testing/browser";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gallery, noiseJpeg, startGallery } from "../media/helpers.js";
import { ARTIFACTS, ensureWebBuilt } from "../web-dist.js";
import { sha } from "./tus.js";

const MiB = 1024 * 1024;
const CHUNK = 8 * MiB;

/** The queue's IndexedDB entries as `{id, size}` (a string: this file is type-checked without the DOM library). */
const storedEntries = (page: Page) =>
  page.evaluate(`new Promise((resolve) => {
    const req = indexedDB.open("gallery-uploads", 1);
    req.onsuccess = () => {
      const r = req.result.transaction("queue").objectStore("queue").getAll();
      r.onsuccess = () => resolve(r.result.map((e) => ({ id: e.id, size: e.file.size })));
    };
  })`) as Promise<{ id: string; size: number }[]>;

describe("the upload queue resumes in Chromium", () => {
  let g: Gallery;
  let base: string;
  let browser: Browser;
  /** Every tus request the server saw: creations and PATCHes with their offset and body length. */
  const seen: { method: string; offset: number; length: number }[] = [];
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    await ensureWebBuilt();
    g = await startGallery({ deps: { clock: systemClock } });
    g.built.app.addHook("onRequest", async (req) => {
      if (!req.url.startsWith("/api/v1/uploads") || (req.method !== "POST" && req.method !== "PATCH")) return;
      seen.push({
        method: req.method,
        offset: Number(req.headers["upload-offset"] ?? 0),
        length: Number(req.headers["content-length"] ?? 0),
      });
    });
    base = await g.built.app.listen({ port: 0, host: "127.0.0.1" });
    browser = await launchChromium();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await g?.close();
  });

  async function guestPage(name: string): Promise<{ ctx: BrowserContext; page: Page; id: string }> {
    const { token, id } = await g.join(name);
    const ctx = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const page = await ctx.newPage();
    await page.goto(`${base}/`);
    await page.evaluate(`localStorage.setItem("gallery.token", ${JSON.stringify(token)})`);
    await page.goto(`${base}/`);
    return { ctx, page, id };
  }

  const uploadRows = (userId: string) =>
    g.built.ctx.database.db.selectFrom("uploads").selectAll().where("user_id", "=", userId).execute();
  const storedBytes = async (row: { original_path: string | null }) =>
    readFile(join(g.built.ctx.paths.mediaDir, row.original_path ?? ""));

  it("continues from the acknowledged offset after a reload mid-upload", async () => {
    // 40 MB: a real JPEG with random-ish bytes after its end (five chunks).
    const file = join(tmpdir(), `queue-reload-${process.pid}.jpg`);
    const bytes = Buffer.concat([await noiseJpeg(64, 64), Buffer.alloc(40 * MiB, 3)]);
    await writeFile(file, bytes);
    const { ctx, page, id } = await guestPage("Reloader");
    const cdp = await ctx.newCDPSession(page);
    await cdp.send("Network.enable");
    const upload = (bytesPerSecond: number) =>
      cdp.send("Network.emulateNetworkConditions", {
        offline: false,
        latency: 5,
        downloadThroughput: -1,
        uploadThroughput: bytesPerSecond,
      });
    await upload(8 * MiB);
    await page.click("[data-testid=upload-fab]");
    await page.locator("[data-testid=file-input]").setInputFiles(file);

    const partials = join(g.dataDir, "partials");
    const held = async () => {
      const [name] = existsSync(partials) ? readdirSync(partials) : [];
      return name ? (await stat(join(partials, name))).size : 0;
    };
    // At least one chunk acknowledged; then slow the uplink to a trickle so the reload lands mid-file.
    await expect.poll(held, { timeout: 60_000, interval: 50 }).toBeGreaterThan(CHUNK);
    await upload(256 * 1024);
    const atReload = seen.length;
    await page.reload();
    // The restored item is back in the queue from IndexedDB; the network returns in full.
    await page.waitForSelector("[data-queue-item]", { timeout: 30_000 });
    expect(await held()).toBeLessThan(bytes.length);
    // It shows what the server holds at once (a chunk at this trickle would take over 30 s).
    const shown = () => page.evaluate(`document.querySelector("[data-queue-item] progress").value`);
    await expect.poll(shown, { timeout: 20_000 }).toBeGreaterThanOrEqual(CHUNK);
    await page.screenshot({ path: join(ARTIFACTS, "queue-resume-after-reload.png") });
    await upload(-1);
    await expect.poll(() => page.locator(".q-done").count(), { timeout: 120_000 }).toBe(1);
    await page.screenshot({ path: join(ARTIFACTS, "queue-resume-reload.png") });

    const rows = await uploadRows(id);
    expect(rows).toHaveLength(1);
    expect(sha(await storedBytes(rows[0] as { original_path: string | null }))).toBe(sha(bytes));
    // Resumed, not restarted: no second creation after the reload, every PATCH after it starts at
    // or beyond the first acknowledged chunk, and the server took in less than twice the file.
    const after = seen.slice(atReload);
    expect(after.filter((r) => r.method === "POST")).toEqual([]);
    const patches = after.filter((r) => r.method === "PATCH" && r.length > 0);
    expect(patches.length).toBeGreaterThan(0);
    for (const p of patches) expect(p.offset).toBeGreaterThanOrEqual(CHUNK);
    const received = seen.filter((r) => r.method === "PATCH").reduce((n, r) => n + r.length, 0);
    expect(received).toBeGreaterThanOrEqual(bytes.length);
    expect(received).toBeLessThan(2 * bytes.length);
    expect(readdirSync(partials)).toEqual([]);
    expect(await storedEntries(page)).toEqual([]);
    await ctx.close();
    rmSync(file, { force: true });
  }, 240_000);

  it("keeps a file refused while uploads are locked and sends it when the host unlocks", async () => {
    const host = await g.host("Lockhost");
    const lock = await g.call("POST", "/host/event/lock", { token: host.token });
    expect(lock.statusCode).toBe(200);
    // Refused at creation (uploads_locked): the file must stay in IndexedDB, not be dropped.
    const file = join(tmpdir(), `queue-locked-${process.pid}.jpg`);
    const bytes = Buffer.concat([await noiseJpeg(64, 64), Buffer.alloc(10 * MiB, 5)]);
    await writeFile(file, bytes);
    const { ctx, page, id } = await guestPage("Patient");
    await page.click("[data-testid=upload-fab]");
    await page.locator("[data-testid=file-input]").setInputFiles(file);

    await page.waitForSelector(".q-locked", { timeout: 60_000 });
    const [entry] = await storedEntries(page);
    expect(entry?.size).toBe(bytes.length);
    expect(await uploadRows(id)).toHaveLength(0);
    await page.screenshot({ path: join(ARTIFACTS, "queue-resume-locked.png") });

    // The host reopens uploads: the event-opened SSE event sends the file, no click.
    const unlock = await g.call("POST", "/host/event/unlock", { token: host.token });
    expect(unlock.statusCode).toBe(200);
    await page.waitForSelector(".q-done", { timeout: 60_000 });
    await page.screenshot({ path: join(ARTIFACTS, "queue-resume-unlocked.png") });

    const rows = await uploadRows(id);
    expect(rows).toHaveLength(1);
    expect(sha(await storedBytes(rows[0] as { original_path: string | null }))).toBe(sha(bytes));
    expect(await storedEntries(page)).toEqual([]);
    await ctx.close();
    rmSync(file, { force: true });
  }, 180_000);
});
