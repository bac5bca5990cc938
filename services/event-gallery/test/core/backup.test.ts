import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createBackup, restoreBackup } from "@app/kit/backup";
import { packageVersion } from "@app/kit/cli";
import { afterEach, describe, expect, it } from "vitest";
import { solidJpeg, upload } from "../media/helpers.js";
import { startGallery } from "./harness.js";

// backup while guests join and upload, restore into a fresh DATA_DIR: every join and upload
// acknowledged before the backup began is there, every original byte for byte, and sessions
// signed with DATA_DIR/jwt-secret stay valid.
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const version = packageVersion(new URL("../../src/main.ts", import.meta.url));

describe("event-gallery backup and restore", () => {
  it("backs up during uploads and joins; the restore has every acknowledged write and media byte", async () => {
    const g = await startGallery();
    cleanups.push(() => g.close());
    const { token } = await g.join("Uploader");
    const sent = new Map<string, string>(); // upload id -> sha256 of the bytes sent
    const joined = new Set<string>();
    let n = 0;
    const one = async () => {
      const i = n++;
      // Each guest uploads one photo (uploads are rate limited per guest).
      const guest = await g.join(`Guest ${i}`);
      joined.add(guest.id);
      const jpeg = await solidJpeg(32 + (i % 50), 24, { r: i % 256, g: (i * 7) % 256, b: 90 });
      const res = await upload(g, guest.token, jpeg);
      expect(res.statusCode, res.body).toBe(201);
      sent.set(res.json().upload.id, sha(jpeg));
    };
    for (let i = 0; i < 10; i++) await one();
    let stop = false;
    const load = (async () => {
      while (!stop) await one();
    })();
    await expect.poll(() => sent.size).toBeGreaterThan(14);
    const uploadsBefore = new Map(sent);
    const joinsBefore = new Set(joined);
    const dir = await mkdtemp(join(tmpdir(), "gallery-backup-"));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const archive = join(dir, "gallery.tar");
    const backend = g.built.ctx.database.backend;
    const manifest = await createBackup(
      { service: "event-gallery", version, dataDir: g.dataDir, backend, sqliteFiles: ["gallery.sqlite"] },
      archive,
    );
    stop = true;
    await load;
    expect(manifest.version).toBe(version);
    expect(manifest.files.map((f) => f.path)).toContain("jwt-secret");

    const restored = join(dir, "restored");
    await restoreBackup({ service: "event-gallery", dataDir: restored }, archive);
    const r = await startGallery({
      env: {
        DATA_DIR: restored,
        ...(g.built.ctx.config.DATABASE_URL ? { DATABASE_URL: g.built.ctx.config.DATABASE_URL } : {}),
      },
    });
    cleanups.push(() => r.close());
    // The session token issued before the backup still verifies (same jwt-secret).
    expect((await r.call("GET", "/me/context", { token })).statusCode).toBe(200);
    const rows = await r.built.ctx.database.db
      .selectFrom("uploads")
      .select(["id", "original_path"])
      .where("id", "in", [...uploadsBefore.keys()])
      .execute();
    expect(rows.length).toBe(uploadsBefore.size);
    for (const row of rows) {
      const bytes = await readFile(join(restored, "media", row.original_path ?? "missing"));
      expect(sha(bytes), row.id).toBe(uploadsBefore.get(row.id));
    }
    const users = await r.built.ctx.database.db
      .selectFrom("users")
      .select("id")
      .where("id", "in", [...joinsBefore])
      .execute();
    expect(users.length).toBe(joinsBefore.size);
  });
});
