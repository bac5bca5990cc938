import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BuiltApp } from "../../src/app.js";
import { type DashboardFixture, setSource, startDashboard } from "../dashboard-kit.js";

const ARTIFACTS = fileURLToPath(new URL("../../.test-artifacts/authoring/", import.meta.url));
const ADMIN = { username: "author", password: "correct horse battery staple" };

const RUNTIME_BUG = `interface Visit { page: string }
export default async function (ctx: Context) {
  const last: Visit | null = null as Visit | null;
  return { statusCode: 200, body: { page: (last as Visit).page } };
}
`;
const FIXED = `interface Visit { page: string }
export default async function (ctx: Context) {
  const visits = kv.collection("visits");
  await visits.set("last", { page: ctx.request?.path ?? "/" });
  return { statusCode: 200, body: await visits.get("last") };
}
`;

describe("the author's path in Chromium: TypeScript, completion, draft runs, versions, live tail, API keys", () => {
  let fx: DashboardFixture;
  let built: BuiltApp;
  let origin: string;
  let appId: string;

  async function openPage(viewport: { width: number; height: number }) {
    const opened = await fx.openPage(viewport);
    await fx.logIn(opened.page, origin);
    return opened;
  }
  const shot = (page: Page, name: string) =>
    page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

  beforeAll(async () => {
    fx = await startDashboard({
      admin: ADMIN,
      artifacts: ARTIFACTS,
      env: { PLATFORM_TRIGGER_MAX_ATTEMPTS: "1" },
    });
    built = fx.built;
    origin = `http://localhost:${fx.port}`;
    const app = await built.ctx.database.db
      .selectFrom("apps")
      .select("id")
      .where("slug", "=", "default")
      .executeTakeFirst();
    appId = app?.id ?? "";
  }, 120_000);

  afterAll(async () => fx?.close());

  it("writes TypeScript with completion, runs the draft, sees the error line, fixes, saves, restores", async () => {
    const { page, errors } = await openPage({ width: 1366, height: 900 });
    await page.goto(`${origin}/admin/apps/${appId}/scripts/new`);
    await page.fill('input[name="name"]', "visits");
    await page.selectOption('select[name="language"]', "typescript");
    // Completion from the SDK declarations: kv. → collection.
    await setSource(page, "export default async function (ctx: Context) {\n  const v = kv.col");
    await page.keyboard.press("Control+Space");
    await page.locator(".cm-tooltip-autocomplete li", { hasText: "collection" }).first().waitFor();
    await shot(page, "01-completion");
    await page.keyboard.press("Enter");
    expect(await page.locator(".cm-content").textContent()).toContain("kv.collection(");

    await setSource(page, RUNTIME_BUG);
    await page.getByRole("button", { name: "Create script" }).click();
    await page.getByTestId("run-panel").waitFor();
    await page.getByRole("button", { name: "Run draft" }).click();
    const runError = page.getByTestId("run-error");
    await runError.waitFor();
    expect(await runError.textContent()).toMatch(/script_error at line 4/);
    // CodeMirror draws only what is in view.
    await page.getByTestId("source-editor").scrollIntoViewIfNeeded();
    await page.locator(".cm-lintRange-error").first().waitFor();
    await shot(page, "02-runtime-error-at-line");

    await setSource(page, FIXED);
    await page.getByRole("button", { name: "Run draft" }).click();
    await page.getByTestId("run-result").locator("text=Status 200").waitFor();
    expect(await page.getByTestId("run-body").textContent()).toContain('"page": "/"');
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText("version 2").waitFor();

    await page.getByRole("button", { name: "View v1" }).click();
    await page.getByTestId("version-diff").waitFor();
    await shot(page, "03-version-diff");
    await page.getByRole("button", { name: "Restore v1" }).click();
    await page.getByText("version 3").waitFor();
    expect(await page.locator(".cm-content").textContent()).toContain("(last as Visit).page");
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);

  it("follows the live tail while a cron trigger fires, on a phone too", async () => {
    const script = await built.ctx.database.db
      .selectFrom("scripts")
      .select("id")
      .where("name", "=", "visits")
      .executeTakeFirst();
    for (const viewport of [
      { width: 1366, height: 900 },
      { width: 390, height: 844 },
    ]) {
      const { page, errors } = await openPage(viewport);
      await page.goto(`${origin}/admin/apps/${appId}/executions`);
      await page.check('input[name="follow"]');
      await page.getByTestId("tail-state").locator("text=following").waitFor();
      if (viewport.width > 1000) {
        const res = await page.evaluate(
          `fetch("/api/v1/admin/apps/${appId}/triggers/cron", { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer " + sessionStorage.getItem("platform_admin_token") }, body: JSON.stringify({ script_id: "${script?.id}", schedule: "* * * * * *", timezone: "UTC" }) }).then((r) => r.status)`,
        );
        expect(res).toBe(201);
      }
      await page
        .getByTestId("live-executions")
        .locator("li", { hasText: "cron" })
        .first()
        .waitFor({ timeout: 20_000 });
      await shot(page, `04-live-tail-${viewport.width}`);
      expect(errors).toEqual([]);
      await page.close();
    }
  }, 90_000);

  it("creates an API key (secret shown once) and revokes it", async () => {
    for (const viewport of [
      { width: 390, height: 844 },
      { width: 1366, height: 900 },
    ]) {
      const { page, errors } = await openPage(viewport);
      await page.goto(`${origin}/admin/keys`);
      await page.fill('input[name="key_name"]', `ci-${viewport.width}`);
      await page.getByRole("button", { name: "Create key" }).click();
      const created = page.getByTestId("new-key");
      await created.waitFor();
      expect(await created.locator("code").textContent()).toMatch(/^spk_/);
      await shot(page, `05-api-key-${viewport.width}`);
      await page
        .getByTestId("api-keys")
        .locator("li", { hasText: `ci-${viewport.width}` })
        .waitFor();
      await page
        .getByTestId("api-keys")
        .locator("li", { hasText: `ci-${viewport.width}` })
        .getByRole("button", { name: "Revoke" })
        .click();
      await page
        .getByTestId("api-keys")
        .locator("li", { hasText: `ci-${viewport.width}` })
        .waitFor({ state: "detached" });
      expect(errors).toEqual([]);
      await page.close();
    }
  }, 60_000);

  it("browses kv and docs on the Data page, views a value and deletes an entry", async () => {
    // Seed through the data plane: a script writes one kv entry and one doc.
    const login = await built.app.inject({ method: "POST", url: "/api/v1/admin/login", payload: ADMIN });
    const auth = { authorization: `Bearer ${login.json().token}` };
    const made = await built.app.inject({
      method: "POST",
      url: "/api/v1/admin/scripts",
      headers: auth,
      payload: {
        app_id: appId,
        name: "seed-data",
        kind: "endpoint",
        source: `export default async function () {
  await kv.collection("prefs").set("theme", { dark: true });
  await docs.collection("notes").create({ text: "hello" }, { id: "n1" });
  return "ok";
}`,
      },
    });
    const run = await built.app.inject({ method: "GET", url: `/api/v1/execute/${made.json().id}` });
    expect(run.statusCode).toBe(200);

    for (const viewport of [
      { width: 390, height: 844 },
      { width: 1366, height: 900 },
    ]) {
      const { page, errors } = await openPage(viewport);
      await page.goto(`${origin}/admin/apps/${appId}/data`);
      const items = page.getByTestId("data-items");
      await items.getByText("theme").click();
      await expect.poll(() => items.textContent()).toContain('"dark": true');
      await page.selectOption('select[name="store"]', "docs");
      await items.getByText("n1").click();
      await expect.poll(() => items.textContent()).toContain('"text": "hello"');
      await shot(page, `06-data-${viewport.width}`);
      expect(errors).toEqual([]);
      await page.close();
    }
    const { page } = await openPage({ width: 1366, height: 900 });
    await page.goto(`${origin}/admin/apps/${appId}/data`);
    await page.getByTestId("data-items").getByText("theme").waitFor();
    // Another test of this file stores visits/last too: delete exactly the theme row.
    await page
      .getByTestId("data-items")
      .locator("li", { hasText: "theme" })
      .getByRole("button", { name: "Delete" })
      .click();
    const keys = async () =>
      (
        await built.app.inject({
          method: "GET",
          url: `/api/v1/admin/apps/${appId}/kv?collection=prefs`,
          headers: auth,
        })
      ).json().items.length;
    await expect.poll(keys).toBe(0);
    await page.close();
    // Three Chromium pages with screenshots, like the other tests of this file: not 30 s under load.
  }, 60_000);
});
