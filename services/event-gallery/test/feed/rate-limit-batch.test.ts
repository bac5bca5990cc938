import { testBackend } from "@app/kit/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDbRateLimiter } from "../../src/limits/limiter.js";
import { type Gallery, startGallery } from "../core/harness.js";

/**
 * The PostgreSQL limiter counts hits by group commit (one upsert for every hit that arrived while
 * the previous one was on its way): the answers must be those of one upsert per hit. Only
 * PostgreSQL uses it (on SQLite one process owns the database and counts in memory).
 */
describe.runIf(testBackend() === "postgres")("the shared rate limiter under concurrent hits", () => {
  let g: Gallery;
  beforeAll(async () => {
    g = await startGallery();
  });
  afterAll(async () => g?.close());

  const outcomes = (results: PromiseSettledResult<void>[]) => ({
    ok: results.filter((r) => r.status === "fulfilled").length,
    refused: results.filter(
      (r) => r.status === "rejected" && (r.reason as { status?: number }).status === 429,
    ).length,
  });

  it("lets exactly `limit` of many concurrent hits through, across two limiters on one database", async () => {
    const a = createDbRateLimiter(g.built.ctx.database, g.clock);
    const b = createDbRateLimiter(g.built.ctx.database, g.clock);
    const hits = Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).hit("batch:k", 12, 60_000));
    // Other keys in the same batches are counted on their own.
    const others = Array.from({ length: 5 }, () => a.hit("batch:other", 12, 60_000));
    expect(outcomes(await Promise.allSettled(hits))).toEqual({ ok: 12, refused: 18 });
    expect(outcomes(await Promise.allSettled(others))).toEqual({ ok: 5, refused: 0 });
    await expect(a.check("batch:k", 12, 60_000)).rejects.toMatchObject({ status: 429 });
    await expect(b.check("batch:other", 12, 60_000)).resolves.toBeUndefined();

    // A window that has run out starts again with the hits of the batch that finds it so.
    await g.clock.advance(60_000);
    const again = Array.from({ length: 15 }, () => a.hit("batch:k", 12, 60_000));
    expect(outcomes(await Promise.allSettled(again))).toEqual({ ok: 12, refused: 3 });
  });
});
