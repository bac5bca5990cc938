import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { loadEnv } from "@app/kit/config";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { envSpec } from "../../src/config.js";
import { runAdminCli } from "../../src/control/admin-cli.js";
import { ADMIN, type Harness, startHarness } from "./harness.js";

describe("admin reset-password CLI", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h.close());

  const io = (stdin: string | null) => {
    const out: string[] = [];
    const err: string[] = [];
    return {
      out,
      err,
      io: { readStdin: async () => stdin, out: (l: string) => out.push(l), err: (l: string) => err.push(l) },
    };
  };
  const config = () =>
    loadEnv(envSpec, { DATA_DIR: h.dataDir, DATABASE_URL: h.built.ctx.config.DATABASE_URL });

  it("sets the password read from stdin and ends the account's sessions", async () => {
    const before = h.token;
    const run = io("piped new password\n");
    expect(await runAdminCli(config(), ["admin", "reset-password", ADMIN.username], run.io)).toBe(0);
    expect(run.out.join("\n")).not.toContain("piped new password");
    expect((await h.call("GET", "/api/v1/admin/me", undefined, before)).statusCode).toBe(401);
    const login = await h.call(
      "POST",
      "/api/v1/admin/login",
      { username: ADMIN.username, password: "piped new password" },
      null,
    );
    expect(login.statusCode).toBe(200);
  });

  it("generates and prints a password when stdin is a terminal", async () => {
    const run = io(null);
    expect(await runAdminCli(config(), ["admin", "reset-password", ADMIN.username], run.io)).toBe(0);
    const password =
      run.out.find((l) => l.startsWith("New password: "))?.slice("New password: ".length) ?? "";
    expect(password.length).toBeGreaterThanOrEqual(20);
    const login = await h.call("POST", "/api/v1/admin/login", { username: ADMIN.username, password }, null);
    expect(login.statusCode).toBe(200);
  });

  it("fails clearly for an unknown account or bad usage", async () => {
    const unknown = io("whatever password");
    expect(await runAdminCli(config(), ["admin", "reset-password", "ghost"], unknown.io)).toBe(1);
    expect(unknown.err.join()).toContain("no admin account named ghost");
    const usage = io(null);
    expect(await runAdminCli(config(), ["admin", "reset-pw"], usage.io)).toBe(2);
    const short = io("short");
    expect(await runAdminCli(config(), ["admin", "reset-password", ADMIN.username], short.io)).toBe(2);
  });

  it("runs as `main admin reset-password` without starting HTTP", () => {
    const main = fileURLToPath(new URL("../../src/main.ts", import.meta.url));
    const env: Record<string, string> = { ...(process.env as Record<string, string>), DATA_DIR: h.dataDir };
    if (h.built.ctx.config.DATABASE_URL) env.DATABASE_URL = h.built.ctx.config.DATABASE_URL;
    else delete env.DATABASE_URL;
    const res = spawnSync(
      process.execPath,
      ["--conditions=source", "--import", "tsx", main, "admin", "reset-password", ADMIN.username],
      {
        input: "from the real cli\n",
        env,
        encoding: "utf8",
        timeout: 170_000,
      },
    );
    expect(res.stderr).toBe("");
    expect(res.status).toBe(0);
    expect(res.stdout).toContain(`Password of ${ADMIN.username} reset`);
    expect(res.stdout).not.toContain("listening on");
    // A cold tsx start of the whole service on a 2-core machine under full load can take minutes.
  }, 180_000);
});
