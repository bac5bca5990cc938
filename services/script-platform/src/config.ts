import { commonEnv, type EnvValues } from "@app/kit/config";

/** Every variable script-platform reads; the same spec validates start-up and prints --help. */
export const envSpec = {
  ...commonEnv("script-platform", 3002),
};

export type Config = EnvValues<typeof envSpec>;
