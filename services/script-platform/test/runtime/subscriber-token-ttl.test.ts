import { ConfigError, formatHelp, loadEnv } from "@app/kit/config";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { envSpec, subscriberTokenTtl } from "../../src/config.js";
import { DEFAULT_APP_ID } from "../../src/db/migrations/0001_control_plane.js";
import { type Harness, startHarness } from "../control/harness.js";
import { createScript } from "../triggers/e2e.js";

const VARS = [
  "PLATFORM_SUBSCRIBER_TOKEN_TTL_S",
  "PLATFORM_SUBSCRIBER_TOKEN_MIN_TTL_S",
  "PLATFORM_SUBSCRIBER_TOKEN_MAX_TTL_S",
] as const;

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error("no ConfigError");
}

describe("subscriber token lifetime clamps (PLATFORM_SUBSCRIBER_TOKEN_*)", () => {
  it("defaults to 3600 s within 60 s .. 7 days, and --help lists each variable", () => {
    expect(subscriberTokenTtl(loadEnv(envSpec, {}))).toEqual({ default: 3600, min: 60, max: 604_800 });
    const help = formatHelp("t", "u", envSpec);
    for (const name of VARS) expect(help).toContain(name);
  });

  it("refuses a value that is not a whole number of seconds, naming the variable", () => {
    for (const name of VARS)
      for (const bad of ["0", "-5", "1.5", "soon", "99999999999"]) {
        const err = configError(() => loadEnv(envSpec, { [name]: bad }));
        expect(err.variable, `${name}=${bad}`).toBe(name);
        expect(err.message).toMatch(/must be an integer from 1 to/);
      }
  });

  it("refuses clamps that contradict each other, with one line naming the variable and the rule", () => {
    const env = (e: Record<string, string>) => loadEnv(envSpec, e);
    const minOverMax = configError(() =>
      subscriberTokenTtl(
        env({ PLATFORM_SUBSCRIBER_TOKEN_MIN_TTL_S: "600", PLATFORM_SUBSCRIBER_TOKEN_MAX_TTL_S: "300" }),
      ),
    );
    expect(minOverMax.variable).toBe("PLATFORM_SUBSCRIBER_TOKEN_MIN_TTL_S");
    expect(minOverMax.message).toBe(
      "Invalid configuration: PLATFORM_SUBSCRIBER_TOKEN_MIN_TTL_S must not exceed PLATFORM_SUBSCRIBER_TOKEN_MAX_TTL_S",
    );
    for (const ttl of ["30", "700000"]) {
      const outside = configError(() => subscriberTokenTtl(env({ PLATFORM_SUBSCRIBER_TOKEN_TTL_S: ttl })));
      expect(outside.variable).toBe("PLATFORM_SUBSCRIBER_TOKEN_TTL_S");
      expect(outside.message).toContain("must lie between PLATFORM_SUBSCRIBER_TOKEN_MIN_TTL_S and");
    }
  });

  it("stops buildApp before anything starts when the default lies outside the clamps", async () => {
    await expect(startHarness({ PLATFORM_SUBSCRIBER_TOKEN_TTL_S: "30" }, { login: false })).rejects.toThrow(
      /PLATFORM_SUBSCRIBER_TOKEN_TTL_S must lie between/,
    );
  });

  describe("wired into the SDK of a running app", () => {
    let h: Harness;
    let script: string;
    beforeAll(async () => {
      h = await startHarness({
        PLATFORM_WORKERS: "1",
        PLATFORM_SUBSCRIBER_TOKEN_TTL_S: "120",
        PLATFORM_SUBSCRIBER_TOKEN_MIN_TTL_S: "100",
        PLATFORM_SUBSCRIBER_TOKEN_MAX_TTL_S: "300",
      });
      script = await createScript(
        h,
        DEFAULT_APP_ID,
        "tokens",
        `export default async function () {
          return [
            await pubsub.subscriberToken("news"),
            await pubsub.subscriberToken("news", { ttl_s: 5 }),
            await pubsub.subscriberToken("news", { ttl_s: 250 }),
            await pubsub.subscriberToken("news", { ttl_s: 86400 }),
          ];
        }`,
      );
    });
    afterAll(async () => h?.close());

    it("mints tokens whose expiry is the default, or the asked lifetime clamped to min/max", async () => {
      const res = await h.call("POST", `/api/v1/execute/${script}`, {});
      expect(res.statusCode, res.body).toBe(200);
      const nowS = Math.floor(h.clock.now() / 1000);
      const lifetimes = (res.json() as string[]).map((token) => {
        const claims = JSON.parse(Buffer.from(token.split(".")[0] ?? "", "base64url").toString("utf8"));
        return claims.e - nowS;
      });
      expect(lifetimes).toEqual([120, 100, 250, 300]);
    });
  });
});
