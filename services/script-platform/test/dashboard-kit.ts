import { mkdir } from "node:fs/promises";
import { loadEnv } from "@app/kit/config";
import { createTestEnv } from "@app/kit/db/testing";
import { captureLogger } from "@app/kit/logger";
import { launchChromium } from "@app/kit/testing/browser";
import type { Browser, Page } from "playwright-core";
import { type BuiltApp, buildApp } from "../src/app.js";
import { envSpec } from "../src/config.js";
import { ensureDashboardBuilt } from "./dashboard-dist.js";

/** Browser tests' shared pieces: the dashboard bundle (built once, see dashboard-dist.ts) and the code editor. */
export { DASHBOARD, ensureDashboardBuilt } from "./dashboard-dist.js";

/** Replace the editor's whole text the way a user would (select all, type). */
export async function setSource(page: Page, source: string): Promise<void> {
  await page.locator(".cm-content").click();
  await page.keyboard.press("Control+A");
  await page.keyboard.press("Delete");
  await page.keyboard.insertText(source);
}

export interface Admin {
  username: string;
  password: string;
}

/** The real platform listening on a port, its first admin, and a Chromium to drive the dashboard. */
export interface DashboardFixture {
  built: BuiltApp;
  port: number;
  browser: Browser;
  /** A page with a 15 s default timeout that accepts confirmations and collects page errors. */
  openPage(viewport?: { width: number; height: number }): Promise<{ page: Page; errors: string[] }>;
  /** Log the fixture's admin in through the dashboard's own form. */
  logIn(page: Page, origin: string): Promise<void>;
  close(): Promise<void>;
}

export async function startDashboard(opts: {
  admin: Admin;
  artifacts: string;
  /** More configuration (environment variable names and values). */
  env?: Record<string, string>;
}): Promise<DashboardFixture> {
  const env = await createTestEnv("script_platform");
  await Promise.all([ensureDashboardBuilt(), mkdir(opts.artifacts, { recursive: true })]);
  const config = loadEnv(envSpec, {
    DATA_DIR: env.dataDir,
    DATABASE_URL: env.databaseUrl,
    PLATFORM_ADMIN_USERNAME: opts.admin.username,
    PLATFORM_ADMIN_PASSWORD: opts.admin.password,
    ...opts.env,
  });
  const built = await buildApp(config, { logger: captureLogger().logger });
  await built.app.listen({ host: "127.0.0.1", port: 0 });
  const port = (built.app.server.address() as { port: number }).port;
  const browser = await launchChromium();
  return {
    built,
    port,
    browser,
    async openPage(viewport = { width: 1100, height: 900 }) {
      const page = await browser.newPage({ viewport });
      page.setDefaultTimeout(15_000);
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      // Deletes ask for confirmation first.
      page.on("dialog", (d) => void d.accept());
      return { page, errors };
    },
    async logIn(page, origin) {
      await page.goto(`${origin}/admin/`);
      await page.fill('input[name="username"]', opts.admin.username);
      await page.fill('input[name="password"]', opts.admin.password);
      await page.click('button[type="submit"]');
      await page.getByRole("button", { name: "Log out" }).waitFor();
    },
    async close() {
      await browser.close();
      await built.app.close();
      await built.close();
      await env.cleanup();
    },
  };
}
