import { commonEnv, type EnvValues } from "@app/kit/config";

/** Every variable portal-bridge reads; the same spec validates start-up and prints --help. */
export const envSpec = {
  ...commonEnv("portal-bridge", 3003),
};

export type Config = EnvValues<typeof envSpec>;
