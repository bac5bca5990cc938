import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Io } from "../../src/cli/io.js";
import { main } from "../../src/cli/main.js";
import { ADMIN, type Harness, startHarness } from "../control/harness.js";

/** The CLI in-process against the platform listening on an ephemeral port, with its own HOME. */
describe("platform CLI against a running platform", () => {
  let h: Harness;
  let url: string;
  let home: string;
  /** Live-tail streams whose response the platform has started. */
  let streamsOpen = 0;
  const countingFetch: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    if (String(input).includes("/executions/stream") && res.ok) streamsOpen++;
    return res;
  };

  interface Ran {
    code: number;
    out: string;
    err: string;
  }
  const cli = async (
    argv: string[],
    opts: {
      env?: Record<string, string>;
      answers?: string[];
      cwd?: string;
      signal?: AbortSignal;
      /** Sees stdout as it is written (a running tail). */
      tap?: (text: string) => void;
    } = {},
  ): Promise<Ran> => {
    let out = "";
    let err = "";
    const answers = [...(opts.answers ?? [])];
    const io: Io = {
      env: { HOME: home, ...opts.env },
      cwd: opts.cwd ?? home,
      out: (t) => {
        out += t;
        opts.tap?.(t);
      },
      err: (t) => {
        err += t;
      },
      prompt: async () => answers.shift() ?? "",
      fetch: countingFetch,
      color: false,
      signal: opts.signal ?? new AbortController().signal,
      close: () => {},
    };
    const code = await main(argv, io);
    return { code, out, err };
  };

  beforeAll(async () => {
    h = await startHarness();
    await h.built.app.listen({ port: 0, host: "127.0.0.1" });
    url = `http://127.0.0.1:${(h.built.app.server.address() as AddressInfo).port}`;
    home = await mkdtemp(join(tmpdir(), "platform-cli-"));
  });
  afterAll(async () => {
    await h.close();
    await rm(home, { recursive: true, force: true });
  });

  it("answers --help, --version and bad usage with exit codes, and needs a login", async () => {
    const help = await cli(["--help"]);
    expect(help.code).toBe(0);
    for (const c of [
      "login --url URL",
      "pull APP [DIR]",
      "push APP [DIR] [--dry-run]",
      "run SCRIPT",
      "tail APP",
    ])
      expect(help.out).toContain(c);
    const pkg = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8"));
    expect(await cli(["--version"])).toMatchObject({ code: 0, out: `${pkg.version}\n` });
    expect((await cli(["push", "--help"])).out).toContain("--dry-run");
    expect(await cli([])).toMatchObject({ code: 2 });
    expect((await cli(["deploy"])).code).toBe(2);
    expect((await cli(["pull"])).code).toBe(2);
    expect((await cli(["tail", "x", "--colour"])).code).toBe(2);
    const notLoggedIn = await cli(["pull", "default"]);
    expect(notLoggedIn.code).toBe(3);
    expect(notLoggedIn.err).toContain("platform login");
  });

  it("logs in with a password (wrong: exit 3) or PLATFORM_TOKEN and keeps the token in a 0600 file", async () => {
    const wrong = await cli(["login", "--url", url], { answers: [ADMIN.username, "nope"] });
    expect([wrong.code, wrong.err]).toEqual([3, "platform login: Wrong username or password.\n"]);
    const xdg = join(home, "xdg");
    const viaToken = await cli(["login", "--url", url], {
      env: { PLATFORM_TOKEN: h.token, XDG_CONFIG_HOME: xdg },
    });
    expect(viaToken.code).toBe(0);
    expect(JSON.parse(await readFile(join(xdg, "platform", "config.json"), "utf8"))).toEqual({
      url,
      token: h.token,
    });
    const badToken = await cli(["login", "--url", url], { env: { PLATFORM_TOKEN: "spk_wrong" } });
    expect(badToken.code).toBe(3);
    const ok = await cli(["login", "--url", `${url}/`], { answers: [ADMIN.username, ADMIN.password] });
    expect(ok.code).toBe(0);
    const file = join(home, ".config", "platform", "config.json");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const saved = JSON.parse(await readFile(file, "utf8"));
    expect(saved.url).toBe(url);
    expect(ok.err).not.toContain(saved.token);
    const me = await h.call("GET", "/api/v1/admin/me", undefined, saved.token);
    expect(me.json().admin.username).toBe(ADMIN.username);
  });

  it("pulls an app to files, pushes edits as new versions with a diff, runs a script", async () => {
    await cli(["login", "--url", url], { answers: [ADMIN.username, ADMIN.password] });
    const app = (await h.call("POST", "/api/v1/admin/apps", { slug: "shop" })).json();
    const create = async (body: Record<string, unknown>) =>
      (await h.call("POST", "/api/v1/admin/scripts", { app_id: app.id, ...body })).json();
    const price = await create({
      name: "price",
      source: "export default (ctx) => ({ total: 2 * Number(ctx.request.query.n ?? 1) });\n",
      timeout_seconds: 5,
    });
    await h.call("POST", `/api/v1/admin/scripts/${price.id}/routes`, { path: "/price/*", method: "GET" });
    await create({
      name: "units",
      kind: "module",
      source: "export const UNIT: string = 'EUR';\n",
      language: "typescript",
    });
    const audit = await create({ name: "audit", source: "export default () => null;\n" });
    await h.call("POST", `/api/v1/admin/apps/${app.id}/triggers/kv`, {
      script_id: audit.id,
      collection: "orders",
      operations: ["set"],
    });

    const pulled = await cli(["pull", "shop"]);
    expect(pulled.code).toBe(0);
    const dir = join(home, "shop");
    expect(await readFile(join(dir, "price.js"), "utf8")).toBe(price.source);
    expect(await readFile(join(dir, "modules", "units.ts"), "utf8")).toContain("UNIT: string");
    const manifest = JSON.parse(await readFile(join(dir, "platform.json"), "utf8"));
    expect(manifest.app).toBe("shop");
    expect(manifest.scripts.price).toMatchObject({
      kind: "endpoint",
      language: "javascript",
      timeout_seconds: 5,
      sandbox: {},
      routes: [{ method: "GET", path: "/price/*" }],
    });
    expect(manifest.scripts.units).toMatchObject({ kind: "module", language: "typescript" });
    expect(manifest.triggers).toEqual([
      expect.objectContaining({
        kind: "kv",
        script: "audit",
        collection: "orders",
        operations: ["set"],
        enabled: true,
      }),
    ]);
    expect(await cli(["push", "shop"], { cwd: dir })).toMatchObject({ code: 0, out: "" });

    // Edit one script, add a TypeScript endpoint importing the module, a route, a trigger change.
    await writeFile(
      join(dir, "price.js"),
      'import { UNIT } from "units";\nexport default (ctx) => ({ total: 3 * Number(ctx.request.query.n ?? 1), unit: UNIT });\n',
    );
    await writeFile(
      join(dir, "stock.ts"),
      "export default async function (ctx: { request: { body: { sku: string } } }) {\n  log.info('stock', ctx.request.body.sku);\n  return { sku: ctx.request.body.sku, left: 7 };\n}\n",
    );
    manifest.scripts.stock = {
      kind: "endpoint",
      language: "typescript",
      routes: [{ method: "POST", path: "/stock" }],
    };
    manifest.triggers[0].enabled = false;
    manifest.scripts.audit.description = "Audits orders";
    await writeFile(join(dir, "platform.json"), JSON.stringify(manifest, null, 2));

    const dry = await cli(["push", "shop", dir, "--dry-run"]);
    expect(dry.code).toBe(0);
    expect(dry.out).toContain("~ script price (v1 → v2): source");
    expect(dry.out).toContain("-export default (ctx) => ({ total: 2 *");
    expect(dry.out).toContain("+export default (ctx) => ({ total: 3 *");
    expect(dry.out).toContain("+ script stock (endpoint, typescript) from stock.ts");
    expect(dry.out).toContain("+ route POST /stock → stock");
    expect(dry.out).toContain("~ trigger kv orders [set] → audit: disabled");
    expect(dry.out).toContain('~ script audit (v1): description "" → "Audits orders"');
    expect(dry.out).not.toContain("script units");
    expect(dry.err).toContain("Dry run: 5 change(s) not pushed.");
    expect((await h.call("GET", `/api/v1/admin/scripts/${price.id}`)).json().version).toBe(1);

    const pushed = await cli(["push", "shop", dir]);
    expect([pushed.code, pushed.err]).toEqual([0, "Pushed 5 change(s) to shop.\n"]);
    const after = (await h.call("GET", `/api/v1/admin/scripts?app_id=${app.id}`)).json().items as Array<{
      id: string;
      name: string;
      version: number;
      language: string;
    }>;
    const byName = Object.fromEntries(after.map((s) => [s.name, s]));
    expect([byName.price?.version, byName.units?.version, byName.audit?.version]).toEqual([2, 1, 1]);
    expect(byName.stock?.language).toBe("typescript");
    const routes = (await h.call("GET", `/api/v1/admin/scripts/${byName.stock?.id}/routes`)).json().items;
    expect(routes.map((r: { method: string; path: string }) => `${r.method} ${r.path}`)).toEqual([
      "POST /stock",
    ]);
    const triggers = (await h.call("GET", `/api/v1/admin/apps/${app.id}/triggers`)).json().items;
    expect(triggers.map((t: { enabled: boolean }) => t.enabled)).toEqual([false]);
    // Nothing left to do: no new versions, no route or trigger churn.
    const again = await cli(["push", "shop", dir]);
    expect([again.code, again.out, again.err]).toEqual([0, "", "shop is up to date.\n"]);

    const ran = await cli(["run", "shop/price", "--path", "/price/x?n=2"]);
    expect(ran.code).toBe(0);
    expect(JSON.parse(ran.out)).toEqual({ total: 6, unit: "EUR" });
    expect(ran.err).toContain("200 price v2");
    const posted = await cli(["run", "stock", "-X", "POST", "--body", '{"sku":"a1"}'], { cwd: dir });
    expect(JSON.parse(posted.out)).toEqual({ sku: "a1", left: 7 });
    expect(posted.err).toContain("info  stock a1");
    await writeFile(
      join(dir, "stock.ts"),
      "export default () => {\n  throw new TypeError('no stock');\n};\n",
    );
    const draft = await cli(["run", "stock", "--app", "shop", "--file", join(dir, "stock.ts")]);
    expect(draft.code).toBe(1);
    expect(draft.err).toContain("script_error: TypeError: no stock (line 2");
    expect((await cli(["run", "shop/stock", "--body", "{oops"])).code).toBe(2);
    expect((await cli(["run", "shop/nope"])).err).toContain("App shop has no script nope.");
  });

  it("refuses a folder with two files for one script and a trigger on an unknown script", async () => {
    const dir = join(home, "bad");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "x.js"), "export default () => 1;\n");
    await writeFile(join(dir, "x.ts"), "export default () => 1;\n");
    const twice = await cli(["push", "default", dir]);
    expect([twice.code, twice.err]).toEqual([
      1,
      "platform push: x.js and x.ts are both script x: keep one.\n",
    ]);
    await rm(join(dir, "x.ts"));
    await writeFile(
      join(dir, "platform.json"),
      JSON.stringify({
        app: "default",
        scripts: {},
        triggers: [{ kind: "pubsub", script: "ghost", topic: "t" }],
      }),
    );
    const ghost = await cli(["push", "default", dir, "--dry-run"]);
    expect(ghost.code).toBe(1);
    expect(ghost.err).toContain("targets script ghost");
  });

  it("tails the live log with status and script filters until stopped", async () => {
    const app = (await h.call("POST", "/api/v1/admin/apps", { slug: "tailed" })).json();
    const create = async (name: string, source: string) =>
      (await h.call("POST", "/api/v1/admin/scripts", { app_id: app.id, name, source })).json().id as string;
    const fine = await create("fine", "export default () => { log.info('all good'); return 1; };");
    const bad = await create("bad", "export default () => {\n  log.warn('about to fail');\n  null.x;\n};");
    let errorsSeen = "";
    let fineSeen = "";
    const stop = new AbortController();
    const errorsOnly = cli(["tail", "tailed", "--status", "error"], {
      signal: stop.signal,
      tap: (t) => {
        errorsSeen += t;
      },
    });
    const fineOnly = cli(["tail", "tailed", "--script", "fine", "--json"], {
      signal: stop.signal,
      tap: (t) => {
        fineSeen += t;
      },
    });
    // The stream polls on the platform's (fake) clock: move it until both runs arrived.
    const until = async (seen: () => boolean) => {
      for (let i = 0; i < 300 && !seen(); i++) {
        await h.clock.advance(500);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    // A tail sends runs that finish after it opened: wait until both streams are open.
    await until(() => streamsOpen >= 2);
    expect((await h.call("GET", `/api/v1/execute/${fine}`)).statusCode).toBe(200);
    expect((await h.call("GET", `/api/v1/execute/${bad}`)).statusCode).toBe(502);
    await until(() => errorsSeen.includes("about to fail") && fineSeen.includes("\n"));
    stop.abort();
    const e = await errorsOnly;
    const f = await fineOnly;
    expect(e.code).toBe(0);
    expect(e.err).toContain("Tailing tailed (status error)");
    expect(e.out).toMatch(/ error {3}bad \(http\)/);
    expect(e.out).toContain("warn  about to fail");
    expect(e.out).toContain("script_error: TypeError");
    expect(e.out).toContain("(line 3");
    expect(e.out).not.toContain("fine");
    const records = f.out
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(records.map((r) => [r.script_id, r.status])).toEqual([[fine, "ok"]]);
    expect((await cli(["tail", "tailed", "--status", "failed"])).code).toBe(2);
  });
});
