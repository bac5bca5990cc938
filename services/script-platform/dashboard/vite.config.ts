import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import preact from "@preact/preset-vite";
import { defineConfig, type Plugin } from "vite";

// The editor's TypeScript worker uses the JavaScript TypeScript compiler (the one ts-blank-space
// strips types with at save; the repository's own `typescript` is the native one, without a
// language service API).
const require = createRequire(import.meta.url);
const tsEntry = createRequire(require.resolve("ts-blank-space")).resolve("typescript");
const tsLib = dirname(tsEntry);

/** `virtual:ts-libs`: the ES2023 lib declarations (no DOM: scripts have none) as strings. */
function tsLibs(): Plugin {
  const id = "\0virtual:ts-libs";
  return {
    name: "ts-libs",
    resolveId: (source) => (source === "virtual:ts-libs" ? id : null),
    load(loading) {
      if (loading !== id) return null;
      const wanted = /^lib\.(es5|es20(1\d|2[0-3])(\.(?!full)[\w.]+)?|decorators(\.legacy)?)\.d\.ts$/;
      const libs = Object.fromEntries(
        readdirSync(tsLib)
          .filter((f) => wanted.test(f))
          .map((f) => [f, readFileSync(join(tsLib, f), "utf8")]),
      );
      return `export default ${JSON.stringify(libs)};`;
    },
  };
}

// Served by the platform under /admin/ (src/http/routes/dashboard.ts); built to dashboard/dist.
export default defineConfig({
  base: "/admin/",
  plugins: [preact({ devToolsEnabled: false, prefreshEnabled: false }), tsLibs()],
  resolve: {
    alias: [
      // `?url` stays on: the messages are an asset fetched only by a German dashboard.
      {
        find: /^ts-service-de(\?.*)?$/,
        replacement: `${join(tsLib, "de", "diagnosticMessages.generated.json")}$1`,
      },
      { find: /^ts-service$/, replacement: tsEntry },
    ],
  },
  worker: { format: "es", plugins: () => [tsLibs()] },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    chunkSizeWarningLimit: 700,
  },
  server: {
    // `npx vite dashboard` during development talks to a platform started on its default port.
    proxy: { "/api": "http://127.0.0.1:3002" },
  },
});
