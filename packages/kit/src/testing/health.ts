import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EnvSpec, type EnvValues, loadEnv } from "../config.js";
import { createTestEnv } from "../db/testing.js";
import type { Logger } from "../logger.js";
import { captureLogger } from "../logger.js";

interface Service<S extends EnvSpec> {
  envSpec: S;
  buildApp(
    config: EnvValues<S>,
    deps: { logger: Logger },
  ): Promise<{ app: FastifyInstance; close(): Promise<void> }>;
  /** A path under the service's API prefix that no route serves. */
  unknownPath: string;
  /** `<metricsName>_build_info{version}` on /metrics (the common contract), with this version. */
  build?: { metricsName: string; version: string };
}

/**
 * The health checks every service answers the same way (common contract): `/healthz` is a plain
 * `ok`, and an unknown path gets the common 404 error body. One suite, run by each service's test.
 */
export function describeHealth<S extends EnvSpec>(name: string, service: Service<S>): void {
  describe(`${name} health`, () => {
    let built: Awaited<ReturnType<Service<S>["buildApp"]>>;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      const env = await createTestEnv(name.replace(/-/g, "_"));
      cleanup = env.cleanup;
      const config = loadEnv(service.envSpec, { DATA_DIR: env.dataDir, DATABASE_URL: env.databaseUrl });
      built = await service.buildApp(config, { logger: captureLogger().logger });
    });
    afterAll(async () => {
      await built.app.close();
      await built.close();
      await cleanup();
    });

    it("answers /healthz with plain ok and nothing else", async () => {
      const res = await built.app.inject({ method: "GET", url: "/healthz" });
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-type"]).toMatch(/^text\/plain/);
      expect(res.body).toBe("ok");
    });

    it.runIf(service.build)("serves the standard process and build metrics", async () => {
      const res = await built.app.inject({ method: "GET", url: "/metrics" });
      expect(res.statusCode).toBe(200);
      const b = service.build as { metricsName: string; version: string };
      expect(res.body).toMatch(/^process_start_time_seconds \d+$/m);
      expect(res.body).toMatch(/^process_resident_memory_bytes \d+$/m);
      expect(res.body).toContain(
        `${b.metricsName}_build_info{version="${b.version}",node="${process.version}"} 1`,
      );
    });

    it("answers unknown paths with the common 404 error body", async () => {
      const res = await built.app.inject({ method: "GET", url: service.unknownPath });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: { code: "not_found", message: expect.any(String) } });
    });
  });
}
