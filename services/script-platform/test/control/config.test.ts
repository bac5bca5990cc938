import { ConfigError, formatHelp, loadEnv } from "@app/kit/config";
import { describe, expect, it } from "vitest";
import { envSpec } from "../../src/config.js";
import { ADMIN, type Harness, startHarness } from "./harness.js";

describe("control-plane configuration", () => {
  it("refuses bad values naming the variable, never the value", () => {
    const cases: [string, string][] = [
      ["PLATFORM_SECRET_KEY", "not-hex-and-secret"],
      ["PUBLIC_BASE_URL", "ftp://files.example"],
      ["PLATFORM_SESSION_TTL_HOURS", "0"],
      ["PLATFORM_SANDBOX_MAX_OPERATIONS", "-5"],
      ["PLATFORM_ADMIN_PASSWORD", "short"],
    ];
    for (const [name, value] of cases) {
      let err: unknown;
      try {
        loadEnv(envSpec, { [name]: value });
      } catch (e) {
        err = e;
      }
      expect(err, name).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).variable).toBe(name);
      if (value.length > 4) expect((err as Error).message).not.toContain(value);
    }
  });

  it("documents every variable in --help", () => {
    const help = formatHelp("t", "u", envSpec);
    for (const name of Object.keys(envSpec)) expect(help).toContain(name);
    expect(help).not.toContain("undefined");
  });

  it("behind a proxy: forwarded protocol and host only under TRUST_PROXY, login throttle per client", async () => {
    const fwd = (ip: string) => ({
      "x-forwarded-for": ip,
      "x-forwarded-proto": "https",
      "x-forwarded-host": "platform.example.org",
    });
    const login = (h: Harness, ip: string, password: string) =>
      h.built.app.inject({
        method: "POST",
        url: "/api/v1/admin/login",
        headers: fwd(ip),
        payload: { username: ADMIN.username, password },
      });
    const off = await startHarness({}, { login: false });
    try {
      const v = await off.built.app.inject({
        url: "/version",
        headers: { ...fwd("1.2.3.4"), host: "10.0.0.5:3002" },
      });
      expect(v.json().public_base_url).toBe("http://10.0.0.5:3002");
      const ok = await login(off, "1.2.3.4", ADMIN.password);
      expect(ok.headers["set-cookie"]).not.toContain("Secure");
      // Without TRUST_PROXY every client is the proxy: another client's failures lock this one out.
      for (let i = 0; i < 10; i++) expect((await login(off, "203.0.113.66", "wrong")).statusCode).toBe(401);
      expect((await login(off, "198.51.100.1", ADMIN.password)).statusCode).toBe(429);
    } finally {
      await off.close();
    }
    const on = await startHarness({ TRUST_PROXY: "1" }, { login: false });
    try {
      const v = await on.built.app.inject({ url: "/version", headers: fwd("1.2.3.4") });
      expect(v.json().public_base_url).toBe("https://platform.example.org");
      const ok = await login(on, "1.2.3.4", ADMIN.password);
      expect(ok.headers["set-cookie"]).toMatch(/; Secure/);
      for (let i = 0; i < 10; i++) expect((await login(on, "203.0.113.66", "wrong")).statusCode).toBe(401);
      expect((await login(on, "203.0.113.66", ADMIN.password)).statusCode).toBe(429);
      expect((await login(on, "198.51.100.1", ADMIN.password)).statusCode).toBe(200);
    } finally {
      await on.close();
    }
  });

  it("PLATFORM_PUBLIC_URL wins over its older name", async () => {
    const h = await startHarness(
      { PLATFORM_PUBLIC_URL: "https://new.example/", PUBLIC_BASE_URL: "https://old.example" },
      { login: false },
    );
    try {
      expect((await h.call("GET", "/version", undefined, null)).json().public_base_url).toBe(
        "https://new.example",
      );
    } finally {
      await h.close();
    }
  });

  it("reports PUBLIC_BASE_URL from /version and refuses half a bootstrap pair", async () => {
    const h = await startHarness({ PUBLIC_BASE_URL: "https://platform.example/" }, { login: false });
    try {
      const v = (await h.call("GET", "/version", undefined, null)).json();
      expect(v.public_base_url).toBe("https://platform.example");
    } finally {
      await h.close();
    }
    await expect(
      startHarness({ PLATFORM_ADMIN_USERNAME: "solo", PLATFORM_ADMIN_PASSWORD: "" }, { login: false }),
    ).rejects.toThrow(/PLATFORM_ADMIN_PASSWORD is required/);
  });
});
