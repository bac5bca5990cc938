import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemClock } from "@app/kit/clock";
import { loadEnv } from "@app/kit/config";
import { createTestEnv, type TestEnv } from "@app/kit/db/testing";
import { captureLogger } from "@app/kit/logger";
import { launchChromium } from "@app/kit/testing/browser";
import type { Browser, BrowserContext, Page } from "playwright-core";
import sharp from "sharp";
import { expect } from "vitest";
import { type BuiltApp, buildApp } from "../../src/app.js";
import { envSpec } from "../../src/config.js";
import { ARTIFACTS, ensureWebBuilt } from "../web-dist.js";

/** What the gallery's Chromium tests share: a listening app, one browser, pages per viewport. */
export const PHONE = { width: 390, height: 844 };
export const LAPTOP = { width: 1366, height: 900 };

export interface BrowserGallery {
  base: string;
  built: BuiltApp;
  browser: Browser;
  /** A scratch folder for files the test makes (removed on close). */
  work: string;
  /** Dialog messages (confirm/alert), in order; every dialog is accepted. */
  dialogs: string[];
  newPage(viewport: { width: number; height: number }, locale?: string): Promise<Page>;
  shot(page: Page, name: string, fullPage?: boolean): Promise<void>;
  close(): Promise<void>;
}

export async function startBrowserGallery(
  name: string,
  env: Record<string, string> = {},
  /** Extra Chromium flags (a fake microphone for the guestbook's voice recorder). */
  chromiumArgs: readonly string[] = [],
): Promise<BrowserGallery> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const work = join(tmpdir(), `gallery-${name}-${process.pid}`);
  mkdirSync(work, { recursive: true });
  await ensureWebBuilt();
  const testEnv: TestEnv = await createTestEnv(`gallery_${name.replace(/\W/g, "_")}`);
  const config = loadEnv(envSpec, { DATA_DIR: testEnv.dataDir, DATABASE_URL: testEnv.databaseUrl, ...env });
  const built = await buildApp(config, { logger: captureLogger().logger, clock: systemClock });
  const base = await built.app.listen({ port: 0, host: "127.0.0.1" });
  const browser = await launchChromium(chromiumArgs);
  const contexts: BrowserContext[] = [];
  const dialogs: string[] = [];
  return {
    base,
    built,
    browser,
    work,
    dialogs,
    async newPage(viewport, locale = "en-US") {
      const phone = viewport.width < 500;
      const ctx = await browser.newContext({
        acceptDownloads: true,
        locale,
        viewport,
        ...(phone ? { hasTouch: true, isMobile: true } : {}),
      });
      contexts.push(ctx);
      const page = await ctx.newPage();
      page.on("dialog", (d) => {
        dialogs.push(d.message());
        d.accept();
      });
      return page;
    },
    async shot(page, file, fullPage = false) {
      await page.screenshot({ path: join(ARTIFACTS, `${file}.png`), fullPage });
    },
    async close() {
      for (const c of contexts) await c.close().catch(() => {});
      await browser.close();
      await built.app.close();
      await built.close();
      await testEnv.cleanup();
      rmSync(work, { recursive: true, force: true });
    },
  };
}

/** Join through the join page and dismiss the PIN card; ends on the feed. */
export async function joinAs(g: BrowserGallery, page: Page, name: string): Promise<void> {
  await page.goto(`${g.base}/join`);
  await page.fill("input[name=name]", name);
  await page.click("button[type=submit]");
  await page.waitForSelector("[data-testid=pin]", { timeout: 10_000 });
  await page.click(".narrow button.primary");
  await page.waitForSelector("[data-testid=upload-fab]", { timeout: 10_000 });
}

/** Sign in on /admin with the password. */
export async function adminLogin(g: BrowserGallery, page: Page, password: string): Promise<void> {
  await page.goto(`${g.base}/admin`);
  await page.fill("input[type=password]", password);
  await page.click("button[type=submit]");
  await page.waitForSelector("[data-testid=save-config]", { timeout: 10_000 });
}

/** A JPEG of one colour written to the scratch folder (for file inputs). */
export async function photoFile(g: BrowserGallery, name: string, hue: number): Promise<string> {
  const path = join(g.work, name);
  await sharp({ create: { width: 1200, height: 900, channels: 3, background: { r: hue, g: 120, b: 200 } } })
    .jpeg()
    .toFile(path);
  return path;
}

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** axe-core on the current page: no serious or critical violation. */
export async function axeCheck(page: Page, name: string): Promise<void> {
  await page.addScriptTag({ content: AXE });
  const result = (await page.evaluate(
    "axe.run(document, { resultTypes: ['violations'] }).then(r => r.violations.map(v => ({ id: v.id, impact: v.impact, nodes: v.nodes.length, target: v.nodes[0] && v.nodes[0].target })))",
  )) as { id: string; impact: string; nodes: number; target: unknown }[];
  const serious = result.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(serious, `${name}: ${JSON.stringify(serious)}`).toEqual([]);
}
