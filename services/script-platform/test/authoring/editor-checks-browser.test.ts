import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DashboardFixture, setSource, startDashboard } from "../dashboard-kit.js";

const ARTIFACTS = fileURLToPath(new URL("../../.test-artifacts/editor-checks/", import.meta.url));
const ADMIN = { username: "checker", password: "correct horse battery staple" };
const VIEWPORTS = [
  { width: 390, height: 844 },
  { width: 1366, height: 900 },
];

/**
 * The editor's TypeScript worker (completion through locals, type errors before save), the Run
 * panel cleared by a save, and failed runs in the live tail: an error-coloured badge, a row that
 * expands to the error and its stack.
 */
describe("editor checks and the failed-run tail in Chromium", () => {
  let fx: DashboardFixture;
  let origin: string;
  let appId: string;
  let token: string;

  const shot = (page: Page, name: string) =>
    page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  const call = async (method: "GET" | "POST", url: string, payload?: object) =>
    fx.built.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${token}` },
      ...(payload ? { payload } : {}),
    });

  const endpoint = async (name: string, source: string): Promise<{ id: string }> =>
    (await call("POST", "/api/v1/admin/scripts", { app_id: appId, name, source })).json();

  beforeAll(async () => {
    fx = await startDashboard({ admin: ADMIN, artifacts: ARTIFACTS });
    origin = `http://localhost:${fx.port}`;
    token = (await fx.built.app.inject({ method: "POST", url: "/api/v1/admin/login", payload: ADMIN })).json()
      .token;
    appId = (await call("POST", "/api/v1/admin/apps", { slug: "checks" })).json().id;
    await call("POST", "/api/v1/admin/scripts", {
      app_id: appId,
      name: "units",
      kind: "module",
      language: "typescript",
      source: "export function price(n: number): number {\n  return n * 2;\n}\n",
    });
  }, 120_000);
  afterAll(async () => fx?.close());

  it("completes members of a local variable and shows type errors before saving", async () => {
    for (const viewport of VIEWPORTS) {
      const { page, errors } = await fx.openPage(viewport);
      await fx.logIn(page, origin);
      await page.goto(`${origin}/admin/apps/${appId}/scripts/new`);
      await page.selectOption('select[name="language"]', "typescript");
      // A local holding a kv collection: its methods come from the SDK types through inference.
      await setSource(
        page,
        'export default async function (ctx: Context) {\n  const c = kv.collection("visits");\n  c.',
      );
      await page.keyboard.press("Control+Space");
      const list = page.locator(".cm-tooltip-autocomplete");
      // The first answer waits for the TypeScript worker to load its libraries: seconds on a busy
      // machine, so that first wait gets a longer bound than the page's default.
      for (const m of ["get", "set", "list", "delete"])
        await list
          .locator("li", { hasText: new RegExp(`^${m}`) })
          .first()
          .waitFor({ timeout: 60_000 });
      await shot(page, `01-local-completion-${viewport.width}`);
      await page.keyboard.press("Escape");
      // JavaScript: an unannotated ctx is `any` to the compiler, so the SDK model answers.
      await page.selectOption('select[name="language"]', "javascript");
      await setSource(page, "export default async function (ctx) {\n  ctx.");
      await page.keyboard.press("Control+Space");
      await list
        .locator("li", { hasText: /^request/ })
        .first()
        .waitFor();
      await page.keyboard.press("Escape");
      // ...and a JavaScript local still gets its inferred members.
      await setSource(
        page,
        'export default async function (ctx) {\n  const d = docs.collection("orders");\n  d.',
      );
      await page.keyboard.press("Control+Space");
      await list
        .locator("li", { hasText: /^patch/ })
        .first()
        .waitFor();
      expect(await list.locator("li", { hasText: /^ctx$/ }).count()).toBe(0);
      await page.keyboard.press("Escape");
      await page.selectOption('select[name="language"]', "typescript");

      // A wrong argument type and a wrong import use: reported while typing, nothing saved yet.
      await setSource(
        page,
        'import { price } from "units";\nexport default async function (ctx: Context) {\n  const total: string = price("3");\n  return { statusCode: 200, body: { total } };\n}\n',
      );
      const box = page.getByTestId("type-errors");
      await box.waitFor();
      await expect.poll(() => box.textContent()).toContain("2 type errors");
      expect(await box.textContent()).toMatch(/Line 3, column \d+: .*'string'/);
      await page.locator(".cm-lintRange-error").first().waitFor();
      await shot(page, `02-type-errors-${viewport.width}`);
      // Fixed: the list goes away without a save.
      await setSource(
        page,
        'import { price } from "units";\nexport default async function (ctx: Context) {\n  const total: number = price(3);\n  return { statusCode: 200, body: { total } };\n}\n',
      );
      await box.waitFor({ state: "detached" });
      expect(await page.getByRole("button", { name: "Create script" }).isVisible()).toBe(true);
      expect(errors).toEqual([]);
      await page.close();
    }
  }, 120_000);

  it("speaks German to a German browser, type errors and the tail included, and switches back", async () => {
    const page = await fx.browser.newPage({ viewport: { width: 390, height: 844 }, locale: "de-DE" });
    page.setDefaultTimeout(15_000);
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`${origin}/admin/`);
    await page.getByRole("heading", { name: "Anmelden" }).waitFor();
    await page.fill('input[name="username"]', ADMIN.username);
    await page.fill('input[name="password"]', ADMIN.password);
    await page.getByRole("button", { name: "Anmelden" }).click();
    await page.getByRole("button", { name: "Abmelden" }).waitFor();
    await page.goto(`${origin}/admin/apps/${appId}/scripts/new`);
    await page.selectOption('select[name="language"]', "typescript");
    await setSource(
      page,
      "export default async function (ctx: Context) {\n  const n: number = 'eins';\n  return n;\n}\n",
    );
    await expect.poll(() => page.getByTestId("type-errors").textContent()).toContain("1 Typfehler");
    expect(await page.getByTestId("type-errors").textContent()).toContain("Zeile 2, Spalte");
    // The compiler's own message in its German translation.
    expect(await page.getByTestId("type-errors").textContent()).toContain("nicht zugewiesen werden");
    await page.getByRole("button", { name: "Skript anlegen" }).waitFor();
    await shot(page, "05-german-type-errors-390");
    await page.goto(`${origin}/admin/apps/${appId}/executions`);
    await page.getByRole("heading", { name: "Ausführungen" }).waitFor();
    await page.getByText("Live mitlesen").waitFor();
    await page.goto(`${origin}/admin/apps/${appId}/triggers`);
    await page.getByRole("heading", { name: "Neuer Trigger" }).waitFor();
    // The app has only a module so far: the form asks for an endpoint first.
    await page.getByText("Legen Sie zuerst ein Endpoint-Skript an").waitFor();
    await shot(page, "06-german-triggers-390");
    await page.goto(`${origin}/admin/apps/${appId}`);
    await page.getByRole("button", { name: "Domain hinzufügen" }).waitFor();
    await page.getByRole("button", { name: "Switch to English" }).click();
    await page.getByRole("button", { name: "Add domain" }).waitFor();
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it("clears the draft-run result on save", async () => {
    const made = await endpoint("draft", "export default () => ({ n: 1 });\n");
    const { page, errors } = await fx.openPage({ width: 1366, height: 900 });
    await fx.logIn(page, origin);
    await page.goto(`${origin}/admin/apps/${appId}/scripts/${made.id}`);
    await page.getByRole("button", { name: "Run draft" }).click();
    await page.getByTestId("run-result").locator("text=Status 200").waitFor();
    await setSource(page, "export default () => ({ n: 2 });\n");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText("version 2").waitFor();
    await page.getByTestId("run-result").waitFor({ state: "detached" });
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it("saves, runs and marks the error line before the editor has loaded; a later type-check adds to the mark", async () => {
    // A type error on line 2, a runtime error on line 4.
    const source =
      'export default async function (ctx: Context) {\n  const label: number = "four";\n  const order = null as { total: number } | null;\n  return { statusCode: 200, body: { total: (order as { total: number }).total } };\n}\n';
    const made = (
      await call("POST", "/api/v1/admin/scripts", {
        app_id: appId,
        name: "late-check",
        language: "typescript",
        source,
      })
    ).json();
    const { page, errors } = await fx.openPage({ width: 1366, height: 900 });
    await fx.logIn(page, origin);
    // Held: the editor's chunk (a slow connection) and the SDK declarations, without which the
    // type-check cannot start.
    const hold = async (pattern: string) => {
      let release = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      await page.route(pattern, async (route) => {
        await held;
        await route.continue();
      });
      return release;
    };
    const releaseEditor = await hold("**/assets/cm-*.js");
    const releaseTypes = await hold("**/api/v1/sdk/types.d.ts");
    await page.goto(`${origin}/admin/apps/${appId}/scripts/${made.id}`);
    expect(await page.locator(".cm-editor").count()).toBe(0);

    // A save before the editor is there keeps the script's text.
    const saved = page.waitForResponse((r) => r.request().method() === "PUT" && r.url().includes(made.id));
    await page.getByRole("button", { name: "Save" }).click();
    expect((await saved).status()).toBe(200);
    expect((await call("GET", `/api/v1/admin/scripts/${made.id}`)).json().source).toBe(source);

    await page.getByRole("button", { name: "Run draft" }).click();
    await page.getByTestId("run-error").waitFor();
    expect(await page.getByTestId("run-error").textContent()).toMatch(/at line 4/);
    releaseEditor();
    // CodeMirror draws only what is in view; the run's result has scrolled the page past the editor.
    await page.locator(".cm-editor").waitFor();
    await page.getByTestId("source-editor").scrollIntoViewIfNeeded();
    const marks = page.locator(".cm-lintRange-error");
    await marks.first().waitFor();
    expect(await marks.count()).toBe(1);
    releaseTypes();
    await expect
      .poll(() => page.getByTestId("type-errors").textContent(), { timeout: 60_000 })
      .toContain("1 type error");
    // The type error joins the run's mark instead of replacing it.
    await expect.poll(() => marks.count()).toBe(2);
    await shot(page, "07-late-type-check-1366");
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);

  it("shows a failed run in the live tail with an error-coloured badge and expands it to the error and stack", async () => {
    const bad = await endpoint(
      "crashy",
      "export default () => {\n  const order = null;\n  return order.total;\n};\n",
    );
    for (const viewport of VIEWPORTS) {
      const { page, errors } = await fx.openPage(viewport);
      await fx.logIn(page, origin);
      await page.goto(`${origin}/admin/apps/${appId}/executions`);
      await page.check('input[name="follow"]');
      await page.getByTestId("tail-state").locator("text=following").waitFor();
      expect((await call("GET", `/api/v1/execute/${bad.id}`)).statusCode).toBe(502);
      const row = page.getByTestId("live-executions").locator("li.execution", { hasText: "crashy" }).first();
      await row.waitFor({ timeout: 20_000 });
      const badge = row.locator(".badge");
      expect(await badge.textContent()).toBe("error");
      // The seed's danger colour (#b42318) behind white text.
      expect(
        await badge.evaluate(
          (el) =>
            (
              globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }
            ).getComputedStyle(el).backgroundColor,
        ),
      ).toBe("rgb(180, 35, 24)");
      expect(await row.locator(".error-line").textContent()).toContain("line 3");
      await shot(page, `03-tail-collapsed-${viewport.width}`);
      await row.locator("button.row-toggle").click();
      expect(await row.getByTestId("execution-error").textContent()).toMatch(
        /script_error at line 3, column \d+: TypeError/,
      );
      expect(await row.getByTestId("execution-stack").textContent()).toContain("crashy:3");
      await shot(page, `04-tail-expanded-${viewport.width}`);
      expect(errors).toEqual([]);
      await page.close();
    }
  }, 120_000);
});
