import { commonEnv, type EnvValues } from "@app/kit/config";

/** Every variable event-gallery reads; the same spec validates start-up and prints --help. */
export const envSpec = {
  ...commonEnv("event-gallery", 3001),
};

export type Config = EnvValues<typeof envSpec>;
