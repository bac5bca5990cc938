import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const kitSrc = fileURLToPath(new URL("./packages/kit/src/", import.meta.url));

// Tests run the TypeScript sources directly; `@app/kit/x` resolves to packages/kit/src/x.ts.
const shared = {
  resolve: { alias: [{ find: /^@app\/kit\/(.*)$/, replacement: `${kitSrc}$1.ts` }] },
};

const project = (name: string, root: string, extra: Record<string, unknown> = {}) => ({
  ...shared,
  test: {
    name,
    root,
    include: ["test/**/*.test.ts", "src/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll's own default (1 s) is a wall-clock bound: on a loaded 2-core CI machine a page
    // update, a socket close or a NOTIFY can take longer. The condition polled stays the same.
    expect: { poll: { timeout: 15_000 } },
    ...extra,
  },
});

export default defineConfig({
  test: {
    projects: [
      project("kit", "packages/kit"),
      project("portal-bridge", "services/portal-bridge"),
      project("event-gallery", "services/event-gallery"),
      project("script-platform", "services/script-platform"),
      project("deploy", "deploy", { include: ["test/**/*.test.ts"] }),
    ],
    passWithNoTests: false,
    // CI asks for a JSON report too (scripts/test-summary.mjs prints the closing line from it).
    reporters: process.env.TEST_REPORT
      ? ["default", ["json", { outputFile: process.env.TEST_REPORT }]]
      : ["default"],
  },
});
