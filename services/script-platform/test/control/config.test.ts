import { ConfigError, formatHelp, loadEnv } from "@app/kit/config";
import { describe, expect, it } from "vitest";
import { envSpec } from "../../src/config.js";
import { startHarness } from "./harness.js";

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
