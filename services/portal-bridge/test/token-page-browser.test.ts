import { launchChromium } from "@app/kit/testing/browser";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUTH, type Harness, startHarness, USER } from "./helpers.js";

describe("/token page in a browser", () => {
  let h: Harness;
  let browser: Browser;
  beforeAll(async () => {
    h = await startHarness();
    await h.listen();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await h.close();
  });

  it("signs in with the shared secret, pastes a cookie line and shows the new status", async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`${h.url}/token`);
    await page.fill('input[name="secret"]', "wrong");
    await page.click('button[type="submit"]');
    await expect.poll(() => page.textContent("body")).toContain("not accepted");
    await page.fill('input[name="secret"]', AUTH);
    await page.click('button[type="submit"]');
    await page.waitForSelector("#token");
    await expect.poll(() => page.textContent("#status")).toContain('"source": "env"');

    await page.fill("#token", "garbage");
    await page.click("#save");
    await expect.poll(() => page.textContent("#result")).toMatch(/not a JWT/);

    const fresh = h.portal.login(USER, { expInS: 40 * 86_400 });
    await page.fill("#token", `jwt=${fresh}; Path=/`);
    await page.click("#save");
    await expect.poll(() => page.textContent("#result")).toContain("Accepted");
    expect(await page.textContent("#status")).toContain('"source": "put"');
    expect(h.built.tokens.token).toBe(fresh);
    expect(errors).toEqual([]);
    await page.close();
    // A Chromium page with four round trips: more than the 30 s default on a loaded machine.
  }, 60_000);
});
