import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { ApiClient } from "./client.js";
import { CliError, EXIT } from "./errors.js";
import { MANIFEST, MODULES_DIR, type RemoteApp } from "./layout.js";

/** The script files and the manifest of a folder (path relative to it → content). */
export async function readFolder(dir: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const take = async (sub: string) => {
    let names: string[];
    try {
      names = await readdir(join(dir, sub));
    } catch {
      return;
    }
    for (const n of names.sort()) {
      const rel = sub ? `${sub}/${n}` : n;
      if (/\.(js|ts)$/.test(n) || rel === MANIFEST) files.set(rel, await readFile(join(dir, rel), "utf8"));
    }
  };
  await take("");
  await take(MODULES_DIR);
  return files;
}

/** Writes `files`; a script file whose twin with the other extension exists replaces it. */
export async function writeFolder(dir: string, files: Map<string, string>): Promise<void> {
  for (const [rel, content] of files) {
    const path = join(dir, rel);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, content);
    const twin = rel.endsWith(".ts")
      ? rel.replace(/\.ts$/, ".js")
      : rel.endsWith(".js")
        ? rel.replace(/\.js$/, ".ts")
        : null;
    if (twin && !files.has(twin)) await rm(join(dir, twin), { force: true });
  }
}

/** Everything of one app that `pull` and `push` compare: scripts, their routes, its triggers. */
export async function fetchRemote(client: ApiClient, appRef: string): Promise<RemoteApp & { id: string }> {
  const app = await client.app(appRef);
  const scripts = await client.scripts(app.id);
  const routes = new Map(
    await Promise.all(
      scripts
        .filter((s) => s.kind === "endpoint")
        .map(async (s) => [s.id, await client.routes(s.id)] as const),
    ),
  );
  let triggers: RemoteApp["triggers"] = null;
  try {
    triggers = await client.triggers(app.id);
  } catch (err) {
    // Triggers need app:admin; a script author with less still pulls and pushes scripts and routes.
    if (!(err instanceof CliError && err.code === EXIT.auth)) throw err;
  }
  return { id: app.id, slug: app.slug, scripts, routes, triggers };
}
