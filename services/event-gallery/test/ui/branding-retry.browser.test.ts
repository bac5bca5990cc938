import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BrowserGallery, PHONE, startBrowserGallery } from "./browser-kit.js";

/**
 * The join page's branding survives a failed first load (a busy server answering 503, a phone
 * between networks): the page retries in the background and shows the event's name once the
 * server answers, without a reload.
 */
const PASSWORD = "branding retry admin password";

describe("the join page's branding in the browser", () => {
  let g: BrowserGallery;

  beforeAll(async () => {
    g = await startBrowserGallery("branding_retry", { GALLERY_ADMIN_PASSWORD: PASSWORD });
    const login = await fetch(`${g.base}/api/v1/admin/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ password: PASSWORD }),
    });
    const { token } = (await login.json()) as { token: string };
    const res = await fetch(`${g.base}/api/v1/admin/config`, {
      method: "PATCH",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ event_name: "Retry Wedding" }),
    });
    expect(res.status).toBe(200);
  }, 120_000);
  afterAll(async () => g?.close());

  it("shows the event's name after the first loads of the event card failed", async () => {
    const page = await g.newPage(PHONE, "en-US");
    let failures = 0;
    await page.route("**/api/v1/event/public", async (route) => {
      if (failures < 2) {
        failures++;
        await route.fulfill({
          status: 503,
          contentType: "application/json",
          body: JSON.stringify({ error: { code: "database_busy", message: "busy" } }),
        });
      } else await route.continue();
    });
    await page.goto(`${g.base}/join`);
    await page.waitForSelector("[data-testid=event-name]:text-is('Retry Wedding')");
    expect(failures).toBe(2);
  }, 60_000);
});
