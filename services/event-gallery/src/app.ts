import type { Clock } from "@app/kit/clock";
import { systemClock } from "@app/kit/clock";
import { createHttpApp, registerHealth } from "@app/kit/http";
import type { Logger } from "@app/kit/logger";
import type { FastifyInstance } from "fastify";
import type { Config } from "./config.js";

export interface AppDeps {
  logger: Logger;
  clock?: Clock;
}

export interface BuiltApp {
  app: FastifyInstance;
  /** Stops background work and closes the database; call after app.close(). */
  close(): Promise<void>;
}

/** Build the event-gallery app from a config object (tests build it in-process). */
export async function buildApp(config: Config, deps: AppDeps): Promise<BuiltApp> {
  const clock = deps.clock ?? systemClock;
  void clock;
  void config;
  const app = createHttpApp({ logger: deps.logger });
  registerHealth(app);
  return { app, close: async () => {} };
}
