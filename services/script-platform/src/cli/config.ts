import { chmod, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CliError, EXIT } from "./errors.js";

/** What `login` stores: the platform's URL and a bearer credential (session token or API key). */
export interface CliConfig {
  url: string;
  token: string;
}

/** `$XDG_CONFIG_HOME/platform/config.json`, else `~/.config/platform/config.json`. */
export function configPath(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CONFIG_HOME || (env.HOME ? join(env.HOME, ".config") : null);
  if (!base) throw new CliError("Neither HOME nor XDG_CONFIG_HOME is set: nowhere to keep the login.");
  return join(base, "platform", "config.json");
}

export async function readConfig(env: NodeJS.ProcessEnv): Promise<Partial<CliConfig>> {
  let text: string;
  try {
    text = await readFile(configPath(env), "utf8");
  } catch {
    return {};
  }
  try {
    const j = JSON.parse(text) as Partial<CliConfig>;
    return {
      ...(typeof j.url === "string" ? { url: j.url } : {}),
      ...(typeof j.token === "string" ? { token: j.token } : {}),
    };
  } catch {
    throw new CliError(`${configPath(env)} is not valid JSON; run \`platform login\` again.`);
  }
}

/** Written to a temp file with mode 0600 and renamed over, so the token is never world-readable. */
export async function writeConfig(env: NodeJS.ProcessEnv, config: CliConfig): Promise<string> {
  const path = configPath(env);
  const dir = join(path, "..");
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, path);
  return path;
}

/** PLATFORM_URL / PLATFORM_TOKEN win over the stored login. */
export async function credentials(env: NodeJS.ProcessEnv): Promise<CliConfig> {
  const stored = await readConfig(env);
  const url = env.PLATFORM_URL || stored.url;
  const token = env.PLATFORM_TOKEN || stored.token;
  if (!url || !token)
    throw new CliError(
      "Not logged in: run `platform login --url URL`, or set PLATFORM_URL and PLATFORM_TOKEN.",
      EXIT.auth,
    );
  return { url: normalizeUrl(url), token };
}

/** The platform's base URL without a trailing slash; only http(s). */
export function normalizeUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new CliError(`Not a URL: ${raw}`, EXIT.usage);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:")
    throw new CliError(`The platform URL must be http or https, not ${u.protocol}`, EXIT.usage);
  return `${u.origin}${u.pathname.replace(/\/+$/, "")}`;
}
