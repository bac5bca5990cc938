import { existsSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "vite";

/** The service's root folder (web/ and .test-artifacts/ live there). */
export const SERVICE_ROOT = fileURLToPath(new URL("../", import.meta.url));
export const ARTIFACTS = join(SERVICE_ROOT, ".test-artifacts");

/** Newest modification time under `path` (a file or a folder tree). */
function newest(path: string): number {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(st.mtimeMs, ...readdirSync(path).map((n) => newest(join(path, n))));
}

/**
 * The service serves web/dist. Rebuild it only when the sources are newer (other test files build
 * apps concurrently and read it), into a side folder that is then swapped in whole.
 */
export async function ensureWebBuilt(): Promise<void> {
  const web = join(SERVICE_ROOT, "web");
  const index = join(web, "dist", "index.html");
  const sources = Math.max(
    newest(join(web, "src")),
    newest(join(web, "index.html")),
    newest(join(web, "vite.config.ts")),
  );
  if (existsSync(index) && statSync(index).mtimeMs >= sources) return;
  const side = join(ARTIFACTS, `web-build-${process.pid}`);
  // Vitest sets NODE_ENV=test, which would give a development build of Preact.
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = "production";
  try {
    await build({
      configFile: join(web, "vite.config.ts"),
      logLevel: "error",
      build: { outDir: side, emptyOutDir: true },
    });
  } finally {
    process.env.NODE_ENV = nodeEnv;
  }
  rmSync(join(web, "dist"), { recursive: true, force: true });
  renameSync(side, join(web, "dist"));
}
