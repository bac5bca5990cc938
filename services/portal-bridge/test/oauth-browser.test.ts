import { createHash, randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { launchChromium } from "@app/kit/testing/browser";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUTH, type Harness } from "./helpers.js";
import { freePort, startOAuthHarness } from "./oauth-helpers.js";

const ARTIFACTS = new URL("../../../.test-artifacts/", import.meta.url).pathname;
const SIZES = [
  { name: "phone", width: 390, height: 844 },
  { name: "desktop", width: 1366, height: 900 },
] as const;

describe("OAuth consent page and the owner's client list, in Chromium", () => {
  let h: Harness;
  let browser: Browser;
  // A local client's loopback callback: records where the consent page sent the browser.
  let callback: Server;
  let REDIRECT = "";
  const landings: URL[] = [];
  beforeAll(async () => {
    const port = await freePort();
    REDIRECT = `http://127.0.0.1:${port}/callback`;
    callback = createServer((req, res) => {
      landings.push(new URL(req.url ?? "/", REDIRECT));
      res.writeHead(200, { "content-type": "text/plain" }).end("back at the client");
    });
    await new Promise<void>((r) => callback.listen(port, "127.0.0.1", r));
    h = await startOAuthHarness();
    browser = await launchChromium();
    await mkdir(ARTIFACTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
    await new Promise((r) => callback?.close(r));
  });

  async function authorizeUrl(name: string): Promise<URL> {
    const reg = await fetch(`${h.url}/oauth/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        client_name: name,
        redirect_uris: [REDIRECT],
        token_endpoint_auth_method: "none",
      }),
    });
    const { client_id } = (await reg.json()) as { client_id: string };
    const verifier = randomBytes(32).toString("base64url");
    const u = new URL(`${h.url}/oauth/authorize`);
    u.search = new URLSearchParams({
      response_type: "code",
      client_id,
      redirect_uri: REDIRECT,
      code_challenge: createHash("sha256").update(verifier).digest("base64url"),
      code_challenge_method: "S256",
      state: "xyz",
    }).toString();
    return u;
  }

  for (const size of SIZES)
    it(`approves a client on the consent page and revokes it from /token (${size.name})`, async () => {
      const context = await browser.newContext({ viewport: { width: size.width, height: size.height } });
      const page = await context.newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      const url = await authorizeUrl(`Claude (${size.name})`);

      await page.goto(url.toString());
      expect(await page.textContent("#client-name")).toBe(`Claude (${size.name})`);
      expect(await page.textContent("#redirect-uri")).toBe(REDIRECT);
      await page.screenshot({ path: `${ARTIFACTS}bridge-oauth-consent-${size.name}.png`, fullPage: true });
      // Nothing on the page may be wider than the screen.
      expect(await page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(
        size.width,
      );

      await page.fill("#owner-secret", "not-the-secret");
      await page.click('button[value="approve"]');
      await expect.poll(() => page.textContent("[role=alert]")).toContain("not accepted");

      await page.fill("#owner-secret", AUTH);
      await Promise.all([page.waitForURL(`${REDIRECT}**`), page.click('button[value="approve"]')]);
      const landed = landings.filter((u) => u.pathname === "/callback").at(-1);
      expect(landed?.searchParams.get("state")).toBe("xyz");
      expect(landed?.searchParams.get("code")).toBeTruthy();

      // The owner's list shows the approved client (after a token exchange it shows a last use).
      await page.goto(`${h.url}/token`);
      await page.fill('input[name="secret"]', AUTH);
      await page.click('button[type="submit"]');
      await page.waitForSelector("#clients:not([hidden])");
      await expect.poll(() => page.textContent("#clients-list")).toContain(`Claude (${size.name})`);
      await page.screenshot({ path: `${ARTIFACTS}bridge-oauth-clients-${size.name}.png`, fullPage: true });
      expect(await page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(
        size.width,
      );

      page.once("dialog", (d) => void d.accept());
      await page.click(`button[aria-label="Revoke: Claude (${size.name})"]`);
      await expect.poll(() => page.textContent("#clients-list")).not.toContain(`Claude (${size.name})`);
      const api = await fetch(`${h.url}/api/oauth/clients`, { headers: { authorization: `Bearer ${AUTH}` } });
      const { clients } = (await api.json()) as { clients: { client_name: string }[] };
      expect(clients.map((c) => c.client_name)).not.toContain(`Claude (${size.name})`);
      expect(errors).toEqual([]);
      await context.close();
      // Two page loads, a redirect and two screenshots in Chromium: more than the 30 s default under load.
    }, 90_000);

  it("speaks German to a German browser", async () => {
    const context = await browser.newContext({ locale: "de-DE", viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    await page.goto((await authorizeUrl("Assistent")).toString());
    expect(await page.textContent("h1")).toBe("Assistenten verbinden");
    expect(await page.textContent('button[value="approve"]')).toBe("Zustimmen");
    await page.screenshot({ path: `${ARTIFACTS}bridge-oauth-consent-de.png`, fullPage: true });
    await context.close();
  }, 60_000);
});
