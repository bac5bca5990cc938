import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { isAbsolute, join, relative } from "node:path";
import { type ApiClient, createApiClient, type ScriptView } from "./client.js";
import { credentials, normalizeUrl, readConfig, writeConfig } from "./config.js";
import { CliError, EXIT } from "./errors.js";
import { fetchRemote, readFolder, writeFolder } from "./folder.js";
import type { Io } from "./io.js";
import { localScripts, MANIFEST, type Manifest, parseManifest, toFiles } from "./layout.js";
import { planPush, type Step } from "./plan.js";
import { paint } from "./print.js";

async function client(io: Io): Promise<ApiClient> {
  const c = await credentials(io.env);
  return createApiClient({ baseUrl: c.url, token: c.token, fetch: io.fetch });
}

const resolvePath = (io: Io, p: string) => (isAbsolute(p) ? p : join(io.cwd, p));
const shown = (io: Io, p: string) => relative(io.cwd, p) || ".";

/** `login --url URL [--username NAME]`: a session token (or PLATFORM_TOKEN, checked) into the config file. */
export async function login(
  io: Io,
  opts: { url?: string | undefined; username?: string | undefined },
): Promise<number> {
  const stored = await readConfig(io.env);
  const raw = opts.url ?? io.env.PLATFORM_URL ?? stored.url;
  if (!raw)
    throw new CliError(
      "login needs --url URL (the platform's address, e.g. http://127.0.0.1:3002).",
      EXIT.usage,
    );
  const url = normalizeUrl(raw);
  let token = io.env.PLATFORM_TOKEN;
  let who: string;
  if (token) {
    const me = await createApiClient({ baseUrl: url, token, fetch: io.fetch }).get<{
      admin: { username: string } | null;
      kind: string;
    }>("/api/v1/admin/me");
    who = me.admin?.username ?? me.kind;
  } else {
    const username = opts.username ?? (await io.prompt("Username: ", false)).trim();
    const password = await io.prompt("Password: ", true);
    if (!username || !password) throw new CliError("A username and a password are needed.", EXIT.usage);
    try {
      const res = await createApiClient({ baseUrl: url, token: null, fetch: io.fetch }).request<{
        token: string;
      }>("POST", "/api/v1/admin/login", {
        username,
        password,
      });
      token = res.token;
    } catch (err) {
      if (err instanceof CliError && err.code === EXIT.auth)
        throw new CliError("Wrong username or password.", EXIT.auth);
      throw err;
    }
    who = username;
  }
  const path = await writeConfig(io.env, { url, token });
  io.err(`Logged in to ${url} as ${who}. Saved to ${path} (readable by you only).\n`);
  return EXIT.ok;
}

/** `pull APP [DIR]`: the app's scripts as files plus platform.json. */
export async function pull(io: Io, app: string, dirArg: string | undefined): Promise<number> {
  const api = await client(io);
  const remote = await fetchRemote(api, app);
  const dir = resolvePath(io, dirArg ?? remote.slug);
  const files = toFiles(remote);
  await writeFolder(dir, files);
  const present = await readFolder(dir);
  const stale = [...present.keys()].filter((f) => f !== MANIFEST && !files.has(f));
  const modules = remote.scripts.filter((s) => s.kind === "module").length;
  const routes = [...remote.routes.values()].reduce((n, r) => n + r.length, 0);
  io.err(
    `Pulled ${remote.slug}: ${remote.scripts.length - modules} endpoint(s), ${modules} module(s), ${routes} route(s), ${
      remote.triggers
        ? `${remote.triggers.length} trigger(s)`
        : "no triggers (these credentials may not read them)"
    } into ${shown(io, dir)}\n`,
  );
  for (const f of stale) io.err(`  ${f} is not on the platform (left in place; push would create it)\n`);
  return EXIT.ok;
}

/** `push APP [DIR] [--dry-run]`: new versions where the folder differs, with the diff first. */
export async function push(
  io: Io,
  app: string,
  dirArg: string | undefined,
  dryRun: boolean,
): Promise<number> {
  const dir = resolvePath(io, dirArg ?? (existsSync(join(io.cwd, MANIFEST)) ? "." : app));
  if (!existsSync(dir))
    throw new CliError(`No folder ${shown(io, dir)}: run \`platform pull ${app}\` first.`);
  const files = await readFolder(dir);
  const manifestText = files.get(MANIFEST);
  const manifest: Manifest = manifestText ? parseManifest(manifestText) : { app, scripts: {} };
  const { scripts, problems } = localScripts(files, manifest);
  if (problems.length > 0) throw new CliError(problems.join("\n"));
  if (scripts.length === 0)
    throw new CliError(`No scripts (*.js, *.ts, ${"modules/*"}) in ${shown(io, dir)}.`);
  const api = await client(io);
  const remote = await fetchRemote(api, app);
  if (manifest.app !== remote.slug && manifest.app !== app)
    io.err(`Note: ${shown(io, dir)} was pulled from ${manifest.app}; pushing it to ${remote.slug}.\n`);
  const plan = planPush(scripts, manifest, remote);
  for (const s of plan.steps) {
    io.out(`${paint(io, s.summary)}\n`);
    if ("diff" in s && s.diff)
      io.out(
        `${s.diff
          .split("\n")
          .map((l) => paint(io, l))
          .join("\n")}\n`,
      );
  }
  for (const name of plan.untouched)
    io.err(`  ${name} is on the platform but not in this folder (left alone)\n`);
  if (plan.steps.length === 0) {
    io.err(`${remote.slug} is up to date.\n`);
    return EXIT.ok;
  }
  if (dryRun) {
    io.err(`Dry run: ${plan.steps.length} change(s) not pushed.\n`);
    return EXIT.ok;
  }
  const ids = new Map(remote.scripts.map((s) => [s.name, s.id]));
  let done = 0;
  for (const step of plan.steps) {
    try {
      await apply(api, remote.id, step, ids);
    } catch (err) {
      if (err instanceof CliError)
        throw new CliError(
          `${step.summary}\n  failed: ${err.message}\n${done} of ${plan.steps.length} change(s) were pushed.`,
          err.code,
        );
      throw err;
    }
    done++;
  }
  io.err(`Pushed ${done} change(s) to ${remote.slug}.\n`);
  return EXIT.ok;
}

async function apply(api: ApiClient, appId: string, step: Step, ids: Map<string, string>): Promise<void> {
  const idOf = (name: string) => {
    const id = ids.get(name);
    if (!id) throw new CliError(`No script ${name}.`);
    return id;
  };
  switch (step.op) {
    case "create-script": {
      const s = await api.request<ScriptView>("POST", "/api/v1/admin/scripts", {
        app_id: appId,
        ...step.body,
      });
      ids.set(s.name, s.id);
      return;
    }
    case "update-script":
      await api.request("PUT", `/api/v1/admin/scripts/${step.id}`, step.body);
      return;
    case "delete-route":
      await api.request("DELETE", `/api/v1/admin/routes/${step.id}`);
      return;
    case "create-route":
      await api.request("POST", `/api/v1/admin/scripts/${idOf(step.script)}/routes`, step.body);
      return;
    case "delete-trigger":
      await api.request("DELETE", `/api/v1/admin/apps/${appId}/triggers/${step.id}`);
      return;
    case "patch-trigger":
      await api.request("PATCH", `/api/v1/admin/apps/${appId}/triggers/${step.id}`, {
        enabled: step.enabled,
      });
      return;
    case "create-trigger":
      await api.request("POST", `/api/v1/admin/apps/${appId}/triggers/${step.kind}`, {
        script_id: idOf(step.script),
        ...step.body,
      });
      return;
  }
}

/** SCRIPT as `APP/NAME`, a script id, or NAME in the app of `--app` or of ./platform.json. */
export async function findScript(
  io: Io,
  api: ApiClient,
  ref: string,
  appOpt: string | undefined,
): Promise<ScriptView> {
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(ref))
    return api.get<ScriptView>(`/api/v1/admin/scripts/${ref}`);
  let app = appOpt;
  let name = ref;
  const slash = ref.indexOf("/");
  if (slash > 0) {
    app = ref.slice(0, slash);
    name = ref.slice(slash + 1);
  }
  if (!app) {
    const manifest = join(io.cwd, MANIFEST);
    if (existsSync(manifest)) app = parseManifest(await readFile(manifest, "utf8")).app;
  }
  if (!app)
    throw new CliError(
      `Which app is ${ref} in? Write APP/${ref}, pass --app APP, or run it in a pulled folder.`,
      EXIT.usage,
    );
  const a = await api.app(app);
  const found = (await api.scripts(a.id)).find((s) => s.name === name);
  if (!found) throw new CliError(`App ${a.slug} has no script ${name}.`);
  return found;
}
