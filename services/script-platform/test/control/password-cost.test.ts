import { expect, it, vi } from "vitest";

// The test projects hash at the lowest Argon2 cost (packages/kit/test/setup/argon2-test-cost.ts);
// this file uses the real library to check the parameters production stores.
vi.unmock("@node-rs/argon2");
// A worker that ran another file first holds modules bound to the cheap hash: load them afresh.
vi.resetModules();

const { hashPassword, verifyPassword } = await import("../../src/control/passwords.js");

it("hashes admin passwords with Argon2id at the production cost (19 MiB, t=2, p=1)", async () => {
  const stored = await hashPassword("correct horse battery");
  expect(stored).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
  expect(await verifyPassword(stored, "correct horse battery")).toBe(true);
  expect(await verifyPassword(stored, "wrong")).toBe(false);
});
