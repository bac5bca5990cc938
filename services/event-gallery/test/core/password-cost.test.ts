import { expect, it, vi } from "vitest";

// The test projects hash at the lowest Argon2 cost (packages/kit/test/setup/argon2-test-cost.ts);
// this file uses the real library to check the parameters production stores.
vi.unmock("@node-rs/argon2");
// A worker that ran another file first holds modules bound to the cheap hash: load them afresh.
vi.resetModules();

const { hashSecret, verifySecret } = await import("../../src/identity/secrets.js");

it("hashes admin passwords and PINs with Argon2id at the production cost (19 MiB, t=2, p=1)", async () => {
  const stored = await hashSecret("0042");
  expect(stored).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
  expect(await verifySecret(stored, "0042")).toBe(true);
  expect(await verifySecret(stored, "0043")).toBe(false);
});
