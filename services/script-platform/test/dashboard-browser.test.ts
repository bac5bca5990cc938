import { request } from "node:http";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DashboardFixture, setSource, startDashboard } from "./dashboard-kit.js";

const ARTIFACTS = fileURLToPath(new URL("../.test-artifacts/dashboard/", import.meta.url));
const ADMIN = { username: "root-admin", password: "correct horse battery staple" };

/** Call a user route on the test server with a chosen Host header (the host selects the app). */
function callWithHost(
  port: number,
  host: string,
  method: string,
  path: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method, path, headers: { host } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        body += c;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

const BROKEN = `export default async function (ctx) {
  log.info("hello from", ctx.request.path);
  const greeting = ;
  return { statusCode: 200, body: { greeting } };
}
`;
const FIXED = `export default async function (ctx) {
  log.info("hello from", ctx.request.path);
  const greeting = "hello " + ctx.request.params.name;
  return { statusCode: 200, body: { greeting } };
}
`;

describe("admin dashboard in headless Chromium against the real platform", () => {
  let fx: DashboardFixture;
  let origin: string;
  let port: number;
  const openPage = (viewport?: { width: number; height: number }) => fx.openPage(viewport);
  const logIn = (page: Page) => fx.logIn(page, origin);

  beforeAll(async () => {
    fx = await startDashboard({
      admin: ADMIN,
      artifacts: ARTIFACTS,
      // One attempt: a failing async run becomes a dead letter at once.
      env: { PLATFORM_TRIGGER_MAX_ATTEMPTS: "1" },
    });
    port = fx.port;
    // Chromium resolves *.localhost to loopback: the app claims this host, so the page's own
    // origin selects the app for user routes and the match tester.
    origin = `http://demo.localhost:${port}`;
  }, 90_000);

  afterAll(async () => fx?.close());

  it("logs in, creates an app and a script, shows a save error at its line, routes and runs it", async () => {
    const { page, errors: pageErrors } = await openPage();
    const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

    // Login: a wrong password shows the server's message; the right one opens the dashboard.
    await page.goto(`${origin}/admin/`);
    await page.fill('input[name="username"]', ADMIN.username);
    await page.fill('input[name="password"]', "wrong password");
    await page.click('button[type="submit"]');
    await page.locator(".error").waitFor();
    await shot("01-login-error");
    await page.fill('input[name="password"]', ADMIN.password);
    await page.click('button[type="submit"]');
    await page.getByRole("button", { name: "Log out" }).waitFor();
    const cookies = await page.context().cookies();
    const session = cookies.find((c) => c.name === "platform_session");
    expect(session?.httpOnly).toBe(true);

    // Create an app, then claim the host this page is served from.
    await page.fill('input[name="slug"]', "demo");
    await page.getByRole("button", { name: "Create app" }).click();
    await page.waitForURL(/\/admin\/apps\/[^/]+$/);
    const appId = /\/admin\/apps\/([^/]+)$/.exec(page.url())![1]!;
    await page.fill('input[name="host"]', "demo.localhost");
    await page.getByRole("button", { name: "Add domain" }).click();
    await page.locator("ul.list code", { hasText: "demo.localhost" }).waitFor();
    await shot("02-app-settings");

    // A script with a syntax error on line 3: the message and a diagnostic on that line.
    await page.getByRole("link", { name: "Scripts" }).click();
    await page.getByRole("link", { name: "New script" }).click();
    await page.fill('input[name="name"]', "hello");
    await setSource(page, BROKEN);
    await page.getByRole("button", { name: "Create script" }).click();
    const problems = page.getByTestId("source-problems");
    await problems.waitFor();
    expect(await problems.textContent()).toMatch(/^Line 3\b/);
    await page.locator(".cm-lintRange-error").first().waitFor();
    // (Browser-side code as strings: this project's TypeScript has no DOM types.)
    const markedLine = await page.evaluate(`(() => {
      const mark = document.querySelector(".cm-lintRange-error").closest(".cm-line");
      return [...document.querySelectorAll(".cm-content .cm-line")].indexOf(mark) + 1;
    })()`);
    expect(markedLine).toBe(3);
    expect(await page.locator(".cm-gutter-lint .cm-lint-marker-error").count()).toBe(1);
    expect(page.url()).toMatch(/\/scripts\/new$/);
    await shot("03-script-error-at-line");

    // Fix and save from the keyboard: the page moves to the saved script, the diagnostics go away.
    await setSource(page, FIXED);
    await page.keyboard.press("Control+s");
    await page.waitForURL(new RegExp(`/admin/apps/${appId}/scripts/[0-9a-f-]{36}$`));
    await page.getByRole("heading", { name: "Script hello" }).waitFor();
    expect(await page.locator(".cm-lintRange-error").count()).toBe(0);

    // Add a route and ask the match tester about a URL on this host.
    await page.fill('input[name="path"]', "/greet/:name");
    await page.getByRole("button", { name: "Add route" }).click();
    await page.getByTestId("routes").locator("code", { hasText: "GET /greet/:name" }).waitFor();
    await page.fill('input[name="url"]', `${origin}/greet/ada`);
    await page.getByRole("button", { name: "Test" }).click();
    const matchResult = page.getByTestId("match-result");
    await matchResult.locator(".ok").waitFor();
    expect(await matchResult.textContent()).toContain('{"name":"ada"}');
    await shot("04-route-and-match");

    // Call the route from the page, then find the execution and its logs.
    const called = await page.evaluate(async () => {
      const res = await fetch("/greet/ada");
      return { status: res.status, body: await res.json() };
    });
    expect(called).toEqual({ status: 200, body: { greeting: "hello ada" } });
    // The run's record is written after its answer: open the list once it is there.
    await expect
      .poll(() =>
        page.evaluate(async (url) => {
          const res = await fetch(url);
          return res.ok ? ((await res.json()) as { items: unknown[] }).items.length : -res.status;
        }, `/api/v1/admin/apps/${appId}/executions?limit=1`),
      )
      .toBeGreaterThan(0);
    await page.getByRole("link", { name: "Executions" }).click();
    const row = page.getByTestId("executions").locator("li.execution").first();
    await row.waitFor();
    await row.locator("button").click();
    await row.locator(".logs li", { hasText: "hello from /greet/ada" }).waitFor();
    await shot("05-execution-logs");

    // The same page is usable on a phone-sized screen.
    await page.setViewportSize({ width: 390, height: 844 });
    await shot("06-mobile-executions");
    const overflow = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth");
    expect(overflow as number).toBeLessThanOrEqual(0);
    await page.goBack();
    await page.getByRole("heading", { name: "Script hello" }).waitFor();
    await page.locator(".cm-content").waitFor();
    await shot("07-mobile-script");
    expect(
      (await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")) as number,
    ).toBeLessThanOrEqual(0);

    // Logout ends the session: the login form is back and the API refuses the old cookie.
    await page.getByRole("button", { name: "Log out" }).click();
    await page.locator('input[name="password"]').waitFor();
    const me = await page.evaluate(async () => (await fetch("/api/v1/admin/me")).status);
    expect(me).toBe(401);
    expect(pageErrors).toEqual([]);
  }, 90_000);

  it("manages an app: slug check and rename, domains, triggers, topics, dead letters", async () => {
    const { page, errors } = await openPage();
    const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
    await logIn(page);

    await page.fill('input[name="slug"]', "ops");
    await page.getByRole("button", { name: "Create app" }).click();
    await page.waitForURL(/\/admin\/apps\/[^/]+$/);
    const appPath = new URL(page.url()).pathname;

    // Rename: the slug check explains the answer, saving renames, the old slug stays with the app.
    await page.fill('input[name="slug"]', "ops-two");
    await page.getByRole("button", { name: "Check" }).click();
    await page.locator(".note", { hasText: "The slug is free." }).waitFor();
    await page.getByRole("button", { name: "Save" }).click();
    await page
      .locator("select[aria-label=App] option", { hasText: "(ops-two)" })
      .waitFor({ state: "attached" });
    await page.fill('input[name="slug"]', "ops");
    await page.getByRole("button", { name: "Check" }).click();
    await page.locator(".note", { hasText: "one of this app's former slugs" }).waitFor();

    // Domain claims: add two, remove one.
    for (const host of ["ops.localhost", "ops.example.com"]) {
      await page.fill('input[name="host"]', host);
      await page.getByRole("button", { name: "Add domain" }).click();
      await page.locator("ul.list li", { hasText: host }).waitFor();
    }
    await page
      .locator("ul.list li", { hasText: "ops.example.com" })
      .getByRole("button", { name: "Remove" })
      .click();
    await page.locator("ul.list li", { hasText: "ops.example.com" }).waitFor({ state: "detached" });
    await shot("08-app-renamed-domains");

    // A failing script behind an async route.
    await page.goto(`${origin}${appPath}/scripts/new`);
    await page.fill('input[name="name"]', "boom");
    await setSource(page, 'export default async function () {\n  throw new Error("kaboom");\n}\n');
    await page.getByRole("button", { name: "Create script" }).click();
    await page.getByRole("heading", { name: "Script boom" }).waitFor();
    await page.fill('input[name="path"]', "/boom");
    await page.selectOption('select[name="dispatch_mode"]', "async");
    await page.getByRole("button", { name: "Add route" }).click();
    await page.getByTestId("routes").locator("code", { hasText: "/boom" }).waitFor();
    // A second route, deleted again.
    await page.fill('input[name="path"]', "/temp/*");
    await page.getByRole("button", { name: "Add route" }).click();
    const temp = page.getByTestId("routes").locator("li", { hasText: "/temp/" });
    await temp.getByRole("button", { name: "Delete" }).click();
    await temp.waitFor({ state: "detached" });
    expect(await page.getByTestId("routes").locator("li").count()).toBe(1);

    // The app's script list shows it with its kind.
    await page.getByRole("link", { name: "All scripts" }).click();
    await page
      .locator("ul.list li", { hasText: "boom" })
      .locator(".badge", { hasText: "endpoint" })
      .waitFor();

    // Triggers: create a cron trigger, disable it, delete it.
    await page.getByRole("link", { name: "Triggers" }).click();
    await page.selectOption('select[name="kind"]', "cron");
    await page.fill('input[name="schedule"]', "0 0 0 1 1 *");
    await page.fill('input[name="timezone"]', "UTC");
    await page.getByRole("button", { name: "Create trigger" }).click();
    const trigger = page.locator("ul.list li", { hasText: "schedule: 0 0 0 1 1 *" });
    await trigger.locator(".ok", { hasText: "enabled" }).waitFor();
    await trigger.getByRole("button", { name: "Disable" }).click();
    await trigger.locator(".muted", { hasText: "disabled" }).waitFor();
    await shot("09-triggers");
    await trigger.getByRole("button", { name: "Delete" }).click();
    await page.getByText("No triggers.").waitFor();

    // Topics: register an external topic, then delete it.
    await page.getByRole("link", { name: "Topics" }).click();
    await page.fill('input[name="name"]', "news");
    await page.getByLabel(/External/).check();
    await page.getByRole("button", { name: "Register topic" }).click();
    const topic = page.locator("ul.list li", { hasText: "news" });
    await topic.locator(".badge", { hasText: "external" }).waitFor();
    await shot("10-topics");
    await topic.getByRole("button", { name: "Delete" }).click();
    await page.getByText("No registered topics.").waitFor();

    // The async run fails once (PLATFORM_TRIGGER_MAX_ATTEMPTS=1) and becomes a dead letter.
    const accepted = await callWithHost(port, "ops.localhost", "GET", "/boom");
    expect(accepted.status).toBe(202);
    await page.getByRole("link", { name: "Dead letters" }).click();
    const letter = page.locator("ul.list li", { hasText: "kaboom" });
    // The dispatcher settles the run in the background: refresh the list until the letter shows
    // (bounded by time, not by a count of refreshes: a loaded CI machine makes each one slow).
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && !(await letter.isVisible())) {
      await page.getByRole("button", { name: "Refresh" }).click();
      await letter.waitFor({ timeout: 250 }).catch(() => {});
    }
    await letter.getByRole("button", { name: "Ignore" }).waitFor();
    await shot("11-dead-letter");
    await letter.getByRole("button", { name: "Ignore" }).click();
    await page.getByText("No unresolved dead letters.").waitFor();
    await page.selectOption("select[aria-label=Status]", "resolved");
    await page
      .locator("ul.list li", { hasText: "kaboom" })
      .locator(".badge", { hasText: "ignored" })
      .waitFor();

    // The failed execution is listed with its error.
    await page.getByRole("link", { name: "Executions" }).click();
    await page.selectOption("select[aria-label=Status]", "error");
    const failed = page.getByTestId("executions").locator("li.execution", { hasText: "boom" }).first();
    await failed.locator(".badge", { hasText: "error" }).waitFor();
    await failed.locator("button").click();
    await failed.locator(".error", { hasText: "kaboom" }).waitFor();
    await shot("12-failed-execution");
    expect(errors).toEqual([]);
    // Six dashboard pages, a dozen screenshots and a background dead letter: room for a loaded machine.
  }, 120_000);
});
