import { vi } from "vitest";

// Setup file of the service test projects: every Argon2 hash (admin passwords, guest PINs) is
// made at the algorithm's lowest cost, so a join or a harness boot does not spend a production
// hash. Verification reads the parameters from the stored hash, so it keeps working unchanged.
// The production parameters are still checked once per service, in a file that calls
// `vi.unmock("@node-rs/argon2")` (see the services' `password-cost.test.ts`).
vi.mock("@node-rs/argon2", async (importOriginal) => {
  const real = await importOriginal<typeof import("@node-rs/argon2")>();
  const hash: typeof real.hash = (password, options, signal) =>
    real.hash(password, { ...options, memoryCost: 8, timeCost: 1, parallelism: 1 }, signal);
  return { ...real, hash };
});
