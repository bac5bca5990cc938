import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ConfigError, commonEnv, envInt, envVar, formatHelp, loadEnv } from "../src/config.js";

const spec = {
  ...commonEnv("demo", 3999),
  API_TOKEN: envVar(z.string().min(32, "must be at least 32 characters"), "shared secret", { secret: true }),
  WORKERS: envVar(envInt(4, 1, 16), "worker count"),
};

const SECRET_SHORT = "hunter2-not-long-enough";

describe("config", () => {
  it("parses values and applies defaults; an empty string counts as unset", () => {
    const cfg = loadEnv(spec, { API_TOKEN: "x".repeat(32), PORT: "", WORKERS: "8" });
    expect(cfg.PORT).toBe(3999);
    expect(cfg.HOST).toBe("127.0.0.1");
    expect(cfg.DATA_DIR).toBe("./data/demo");
    expect(cfg.WORKERS).toBe(8);
    expect(cfg.DATABASE_URL).toBeUndefined();
  });

  it("names the variable and the rule but never the value", () => {
    let err: unknown;
    try {
      loadEnv(spec, { API_TOKEN: SECRET_SHORT });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const msg = (err as Error).message;
    expect(msg).toContain("API_TOKEN");
    expect(msg).toContain("at least 32 characters");
    expect(msg).not.toContain(SECRET_SHORT);
    expect(msg.split("\n")).toHaveLength(1);
  });

  it("does not echo a malformed database URL (it may carry a password)", () => {
    const url = "mysql://root:s3cretpass@db/app";
    expect(() => loadEnv(spec, { API_TOKEN: "x".repeat(32), DATABASE_URL: url })).toThrow(/DATABASE_URL/);
    try {
      loadEnv(spec, { API_TOKEN: "x".repeat(32), DATABASE_URL: url });
    } catch (e) {
      expect((e as Error).message).not.toContain("s3cretpass");
    }
  });

  it("rejects out-of-range integers with the rule", () => {
    expect(() => loadEnv(spec, { API_TOKEN: "x".repeat(32), WORKERS: "99" })).toThrow(
      "WORKERS is invalid: must be an integer from 1 to 16",
    );
    expect(() => loadEnv(spec, { API_TOKEN: "x".repeat(32), PORT: "http" })).toThrow(/PORT/);
  });

  it("prints --help from the same spec, marking secrets and never showing their values", () => {
    const text = formatHelp("demo", "demo [--help]", spec);
    for (const name of Object.keys(spec)) expect(text).toContain(name);
    expect(text).toMatch(/API_TOKEN\s+shared secret \(secret\)/);
    expect(text).toContain("default: 3999");
  });
});
