import preact from "@preact/preset-vite";
import { defineConfig } from "vite";

// The gallery service serves web/dist at "/" (src/http/routes/web.ts).
export default defineConfig({
  root: import.meta.dirname,
  plugins: [preact()],
  build: { outDir: "dist", emptyOutDir: true, target: "es2022", sourcemap: false },
  server: { proxy: { "/api": "http://127.0.0.1:3001" } },
});
