import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";

/** Browser tests' shared pieces: the dashboard bundle and the code editor. */
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
 * missing or older than the sources, so a test never exercises a stale bundle.
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

/** Replace the editor's whole text the way a user would (select all, type). */
export async function setSource(page: Page, source: string): Promise<void> {
  await page.locator(".cm-content").click();
  await page.keyboard.press("Control+A");
  await page.keyboard.press("Delete");
  await page.keyboard.insertText(source);
}
