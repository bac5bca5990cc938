import { fileURLToPath } from "node:url";
import { launchChromium } from "@app/kit/testing/browser";
import type { Browser } from "playwright-core";
import { build, type Rolldown } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The web app's store hook in Chromium: a component re-renders for a change that comes between
 * its first render and its subscription (a fetch answering while the page paints), not only for
 * later ones. Before, the join page could keep the default name and no cover for good.
 */
describe("useStore in a browser", () => {
  let browser: Browser;
  let script: string;

  beforeAll(async () => {
    const out = (await build({
      configFile: false,
      logLevel: "silent",
      build: {
        write: false,
        minify: false,
        lib: {
          entry: fileURLToPath(new URL("./fixtures/store-harness.ts", import.meta.url)),
          formats: ["iife"],
          name: "storeHarness",
        },
      },
    })) as Rolldown.RolldownOutput[];
    const chunk = out[0]?.output[0];
    if (chunk?.type !== "chunk") throw new Error("the harness did not build");
    script = chunk.code;
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => browser?.close());

  it("shows a change made before the component subscribed, and the changes after it", async () => {
    const page = await browser.newPage();
    await page.setContent('<div id="root"></div>');
    await page.addScriptTag({ content: script });
    await page.waitForSelector("#shown:text-is('after')", { timeout: 5_000 });
    // One render for the first value, one for the change: no render per subscription on top.
    expect(await page.getAttribute("#shown", "data-renders")).toBe("2");
    await page.evaluate(() => (globalThis as unknown as { setShown: (v: string) => void }).setShown("later"));
    await page.waitForSelector("#shown:text-is('later')", { timeout: 5_000 });
    expect(await page.getAttribute("#shown", "data-renders")).toBe("3");
  }, 30_000);
});
