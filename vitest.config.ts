import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { configDefaults, defineConfig } from "vitest/config";

const kitSrc = fileURLToPath(new URL("./packages/kit/src/", import.meta.url));
const argon2TestCost = fileURLToPath(
  new URL("./packages/kit/test/setup/argon2-test-cost.ts", import.meta.url),
);

// Tests run the TypeScript sources directly; `@app/kit/x` resolves to packages/kit/src/x.ts.
const shared = {
  resolve: { alias: [{ find: /^@app\/kit\/(.*)$/, replacement: `${kitSrc}$1.ts` }] },
};

/**
 * Files run in parallel, several in one worker process that keeps the modules it loaded (Vitest's
 * `isolate: false`): a file does not pay the import of the app's module graph again. So a test
 * file binds port 0, works in its own temp dir and database (`createTestEnv`), leaves no global
 * state behind (timers, mocks, process.env) and waits for events rather than for wall-clock time.
 * Paths below are from the project's root, each with its reason.
 */
/** Files that need a process of their own (they mock or reload modules others share). */
const isolated: Record<string, string[]> = {
  kit: [],
  "portal-bridge": [],
  // The real Argon2 instead of the setup file's cheap one: modules loaded afresh.
  "event-gallery": ["test/core/password-cost.test.ts"],
  "script-platform": ["test/control/password-cost.test.ts"],
};
/** Files that must not share the machine with another file: one at a time, after all others. */
const serial: Record<string, string[]> = {
  kit: [],
  "portal-bridge": [],
  "event-gallery": [],
  // The sandbox's watchdog and the other workers' latency, measured on the wall clock (the
  // workers' deadlines are real time by design); its memory check reads the process's RSS.
  "script-platform": ["test/runtime/isolation.test.ts"],
};

interface Extra {
  /** Files for the project's setupFiles. */
  setupFiles?: string[];
  /** Run once before the project's files (builds what parallel files read). */
  globalSetup?: string;
}

const base = (name: string, root: string, extra: Extra) => ({
  ...shared,
  test: {
    name,
    root,
    // Bounds, not waits: on a 2-core machine shared with other work a test doing a thousand
    // PostgreSQL round trips or an 8-hour fake-clock run can take many times its usual time.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // expect.poll's own default (1 s) is a wall-clock bound: on a loaded 2-core CI machine a page
    // update, a socket close or a NOTIFY can take longer. The condition polled stays the same.
    expect: { poll: { timeout: 15_000 } },
    setupFiles: extra.setupFiles ?? [],
  },
});

/**
 * The project's shared-process files (named as the project), and when it has any, its isolated
 * (`<name>-isolated`) and serial (`<name>-serial`) ones.
 */
function project(name: string, root: string, extra: Extra = {}) {
  const include = ["test/**/*.test.ts", "src/**/*.test.ts"];
  const own = isolated[name] ?? [];
  const alone = serial[name] ?? [];
  const pooled = base(name, root, extra);
  const out: object[] = [
    {
      ...pooled,
      test: {
        ...pooled.test,
        include,
        exclude: [...configDefaults.exclude, ...own, ...alone],
        isolate: false,
        ...(extra.globalSetup ? { globalSetup: [extra.globalSetup] } : {}),
      },
    },
  ];
  if (own.length > 0) {
    const p = base(`${name}-isolated`, root, extra);
    out.push({ ...p, test: { ...p.test, include: own } });
  }
  if (alone.length > 0) {
    const p = base(`${name}-serial`, root, extra);
    out.push({ ...p, test: { ...p.test, include: alone, maxWorkers: 1 } });
  }
  return out;
}

// Vitest's default is one worker per core but one: a single file at a time on a 2-core machine,
// where most files spend much of their time waiting on fsync, child processes or Chromium.
// VITEST_MAX_WORKERS overrides it (the CLI's --maxWorkers too).
const maxWorkers = Number(process.env.VITEST_MAX_WORKERS) || Math.max(2, availableParallelism());

export default defineConfig({
  test: {
    projects: [
      ...project("kit", "packages/kit"),
      ...project("portal-bridge", "services/portal-bridge"),
      ...project("event-gallery", "services/event-gallery", {
        setupFiles: [argon2TestCost],
        globalSetup: "test/global-setup.ts",
      }),
      ...project("script-platform", "services/script-platform", {
        setupFiles: [argon2TestCost],
        globalSetup: "test/dashboard-dist.ts",
      }),
      // The built services behind nginx and the npm start tree: ports of their own, real processes,
      // a 600 MB upload; one file at a time, each in its own process.
      (() => {
        const p = base("deploy", "deploy", {});
        return { ...p, test: { ...p.test, include: ["test/**/*.test.ts"], maxWorkers: 1 } };
      })(),
    ],
    maxWorkers,
    passWithNoTests: false,
    // CI asks for a JSON report too (scripts/test-summary.mjs prints the closing line from it).
    reporters: process.env.TEST_REPORT
      ? ["default", ["json", { outputFile: process.env.TEST_REPORT }]]
      : ["default"],
  },
});
