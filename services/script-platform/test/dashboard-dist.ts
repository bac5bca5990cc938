import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The dashboard's folder (its sources in src/, the bundle in dist/). */
export const DASHBOARD = fileURLToPath(new URL("../dashboard/", import.meta.url));

/** Newest modification time under a folder (the dashboard sources). */
async function newestMtime(dir: string): Promise<number> {
  let newest = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) newest = Math.max(newest, (await stat(join(entry.parentPath, entry.name))).mtimeMs);
  }
  return newest;
}

/**
 * `npm ci` builds the dashboard (root prepare → workspace build); build it here too when dist is
 * missing or older than the sources, so a test never exercises a stale bundle. Vitest's global
 * setup calls it once before any test file runs (test files run in parallel and read dist/).
 */
export async function ensureDashboardBuilt(): Promise<void> {
  const built = await stat(join(DASHBOARD, "dist", "index.html")).then(
    (s) => s.mtimeMs,
    () => 0,
  );
  if (built > (await newestMtime(join(DASHBOARD, "src")))) return;
  const { build } = await import("vite");
  await build({ root: DASHBOARD, configFile: join(DASHBOARD, "vite.config.ts"), logLevel: "warn" });
}

/** Vitest global setup of the platform project. */
export default ensureDashboardBuilt;
