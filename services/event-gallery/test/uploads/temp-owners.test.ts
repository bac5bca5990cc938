import { mkdir, readdir, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sweepLeftovers } from "../../src/uploads/sweep.js";
import { OWNERS_DIR, ownerOfTemp, renewOwner } from "../../src/uploads/temp-owners.js";
import { type Gallery, startGallery } from "../core/harness.js";

/**
 * Temp files belong to the app instance that writes them; the sweep (any instance's, on one data
 * folder) removes them only once that owner stopped renewing its marker for GALLERY_UPLOAD_IDLE_S.
 * Other instances are played by marker and temp files written here (the sweep sees only files).
 */
describe("temp file ownership", () => {
  let g: Gallery;
  const IDLE_MS = 20_000;
  beforeAll(async () => {
    g = await startGallery({ env: { GALLERY_UPLOAD_IDLE_S: "20" } });
    await mkdir(originals(), { recursive: true });
  });
  afterAll(async () => g?.close());

  const originals = () => join(g.built.ctx.paths.mediaDir, "originals");
  const names = async () => (await readdir(originals())).filter((n) => n.startsWith(".tmp-"));
  const tempOf = async (owner: string, ageMs: number) => {
    const name = `.tmp-${owner}-${"0123456789abcdef"}`;
    const path = join(originals(), name);
    await writeFile(path, "x".repeat(10));
    const at = new Date(g.clock.now() - ageMs);
    await utimes(path, at, at);
    return name;
  };

  it("names this instance's temp files after it", async () => {
    expect(g.built.ctx.tempOwner).toMatch(/^[0-9a-f]{12}$/);
    expect(ownerOfTemp(`.tmp-${g.built.ctx.tempOwner}-0123456789abcdef`)).toBe(g.built.ctx.tempOwner);
    expect(ownerOfTemp(".tmp-0123456789abcdef")).toBeNull();
  });

  it("keeps a live owner's files however old, and removes a dead owner's within the idle limit of its last renewal", async () => {
    const { dataDir } = g.built.ctx.paths;
    const alive = "aaaaaaaaaaaa";
    const killed = "bbbbbbbbbbbb";
    // Both renew now; then `killed` stops (kill -9), `alive` renews every quarter as the sweeper does.
    await renewOwner(dataDir, alive, g.clock.now());
    await renewOwner(dataDir, killed, g.clock.now());
    const aliveFile = await tempOf(alive, 3_600_000);
    const killedFile = await tempOf(killed, 0);
    const ownFile = await tempOf(g.built.ctx.tempOwner, 3_600_000);
    for (let t = 0; t < 4; t++) {
      g.clock.set(g.clock.now() + IDLE_MS / 4 - 1);
      await renewOwner(dataDir, alive, g.clock.now());
      // Within the idle limit of its last renewal a silent owner may only be slow: kept.
      expect(await sweepLeftovers(g.built.ctx)).toEqual({ temp_files: 0, partials: 0 });
    }
    g.clock.set(g.clock.now() + IDLE_MS / 4);
    await renewOwner(dataDir, alive, g.clock.now());
    expect(await sweepLeftovers(g.built.ctx)).toEqual({ temp_files: 1, partials: 0 });
    expect(await names()).toEqual(expect.arrayContaining([aliveFile, ownFile]));
    expect(await names()).not.toContain(killedFile);
    // The dead owner's marker goes with its files; the live one's stays.
    expect(await readdir(join(dataDir, OWNERS_DIR))).not.toContain(killed);
    expect(await readdir(join(dataDir, OWNERS_DIR))).toContain(alive);
  });

  it("a file whose owner left no marker at all is an orphan; one without an owner goes by age", async () => {
    const orphan = await tempOf("cccccccccccc", 0);
    const legacyOld = ".tmp-0123456789abcdef";
    const legacyNew = ".tmp-fedcba9876543210";
    for (const [name, age] of [
      [legacyOld, 2 * IDLE_MS + 1_000],
      [legacyNew, IDLE_MS],
    ] as const) {
      await writeFile(join(originals(), name), "x");
      const at = new Date(g.clock.now() - age);
      await utimes(join(originals(), name), at, at);
    }
    expect(await sweepLeftovers(g.built.ctx)).toMatchObject({ temp_files: 2 });
    const left = await names();
    expect(left).not.toContain(orphan);
    expect(left).not.toContain(legacyOld);
    expect(left).toContain(legacyNew);
  });
});
