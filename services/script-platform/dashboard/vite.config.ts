import preact from "@preact/preset-vite";
import { defineConfig } from "vite";

// Served by the platform under /admin/ (src/http/routes/dashboard.ts); built to dashboard/dist.
export default defineConfig({
  base: "/admin/",
  plugins: [preact({ devToolsEnabled: false, prefreshEnabled: false })],
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
