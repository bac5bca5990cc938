import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BackupError, createBackup, MANIFEST_NAME, restoreBackup, runBackupCommand } from "@app/kit/backup";
import * as tar from "tar";
import { afterEach, describe, expect, it } from "vitest";
import { PRODUCT_VERSION } from "../../src/version.js";
import { type Harness, startHarness } from "./harness.js";

// backup while scripts write files and rows, restore into a fresh DATA_DIR, and every write
// acknowledged before the backup started is there, byte for byte; secrets sealed with the
// master key in DATA_DIR/secret.key still decrypt. On PostgreSQL the archive holds DATA_DIR only
// (the database is dumped with pg_dump): the restored folder serves the same database.
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const WRITER = `export default async (ctx) => {
  const n = ctx.request.query.n;
  const data = "file " + n + " " + "x".repeat(Number(n) * 97 % 5000);
  await files.collection("load").create({ name: "f" + n, data });
  await kv.collection("load").set("k" + n, { n: Number(n) });
  return { ok: true };
}`;
// Reads the named writes (on PostgreSQL the database also holds writes made after the backup,
// whose files a restored DATA_DIR rightly lacks).
const READER = `export default async (ctx) => {
  const c = files.collection("load");
  const out = {};
  const kvs = {};
  for (const n of ctx.request.query.n.split(",")) {
    const got = await c.get("f" + n);
    out["f" + n] = got ? new TextDecoder().decode(got.data) : null;
    kvs["k" + n] = await kv.collection("load").get("k" + n);
  }
  return { files: out, kv: kvs, secret: await secrets.get("api") };
}`;
const expected = (n: number) => `file ${n} ${"x".repeat((n * 97) % 5000)}`;

async function tempDir(prefix: string) {
  const d = await mkdtemp(join(tmpdir(), prefix));
  cleanups.push(() => rm(d, { recursive: true, force: true }));
  return d;
}

const specOf = (h: Harness) => ({
  service: "script-platform",
  version: PRODUCT_VERSION,
  dataDir: h.dataDir,
  backend: h.built.ctx.database.backend,
  sqliteFiles: ["platform.sqlite"],
});

describe("script-platform backup and restore", () => {
  it("backs up during a write load; the restore has every acknowledged write, file and secret", async () => {
    const h = await startHarness();
    cleanups.push(() => h.close());
    const appId = (await h.call("POST", "/api/v1/admin/apps", { slug: "load" })).json().id;
    expect(
      (await h.call("POST", `/api/v1/admin/apps/${appId}/secrets`, { name: "api", value: { key: "s3cr3t" } }))
        .statusCode,
    ).toBe(201);
    const script = async (name: string, source: string) =>
      (
        await h.call("POST", "/api/v1/admin/scripts", { app_id: appId, name, kind: "endpoint", source })
      ).json().id;
    const writer = await script("writer", WRITER);
    const reader = await script("reader", READER);
    const write = async (n: number) => {
      const res = await h.call("POST", `/api/v1/execute/${writer}?n=${n}`, undefined, null);
      expect(res.statusCode, res.body).toBe(200);
      return n;
    };
    for (let n = 0; n < 20; n++) await write(n);

    // Writes keep coming while the backup runs; those acknowledged before it began must be in it.
    const acked = new Set<number>(Array.from({ length: 20 }, (_, i) => i));
    let next = 20;
    let stop = false;
    const load = (async () => {
      while (!stop) acked.add(await write(next++));
    })();
    await expect.poll(() => acked.size).toBeGreaterThan(25);
    const before = new Set(acked);
    const dir = await tempDir("platform-backup-");
    const archive = join(dir, "platform.tar.gz");
    const manifest = await createBackup(specOf(h), archive);
    stop = true;
    await load;
    expect(manifest).toMatchObject({ service: "script-platform", version: PRODUCT_VERSION, format: 1 });
    const paths = manifest.files.map((f) => f.path);
    expect(paths).toContain("secret.key");
    if (h.built.ctx.database.backend === "sqlite") {
      expect(manifest.database).toEqual({ included: true, files: ["platform.sqlite"] });
      expect(paths).toContain("platform.sqlite");
      expect(paths.some((p) => p.endsWith("-wal"))).toBe(false);
    } else {
      expect(manifest.database.included).toBe(false);
      expect(paths).not.toContain("platform.sqlite");
    }

    const restored = join(await tempDir("platform-restore-"), "data");
    await restoreBackup({ service: "script-platform", dataDir: restored }, archive);
    const r = await startHarness({
      DATA_DIR: restored,
      ...(h.built.ctx.config.DATABASE_URL ? { DATABASE_URL: h.built.ctx.config.DATABASE_URL } : {}),
    });
    cleanups.push(() => r.close());
    const read = await r.call("GET", `/api/v1/execute/${reader}?n=${[...before].join(",")}`, undefined, null);
    expect(read.statusCode, read.body).toBe(200);
    const body = read.json() as {
      files: Record<string, string>;
      kv: Record<string, { n: number }>;
      secret: unknown;
    };
    expect(body.secret).toEqual({ key: "s3cr3t" });
    for (const n of before) {
      expect(body.files[`f${n}`], `file f${n}`).toBe(expected(n));
      expect(body.kv[`k${n}`]).toEqual({ n });
    }
  });

  it("restore refuses a non-empty DATA_DIR, another service's archive and a damaged one, in one line", async () => {
    const h = await startHarness();
    cleanups.push(() => h.close());
    const dir = await tempDir("platform-refuse-");
    const archive = join(dir, "b.tar");
    const io = { out: [] as string[], err: [] as string[] };
    const sink = { out: (l: string) => io.out.push(l), err: (l: string) => io.err.push(l) };
    expect(await runBackupCommand(["backup", "--to", archive], specOf(h), sink)).toBe(0);
    expect(io.out[0]).toMatch(/^backup of script-platform .* written to /);

    const full = join(dir, "full");
    await writeFile(join(dir, "marker"), "x");
    expect(await runBackupCommand(["restore", "--from", archive], { ...specOf(h), dataDir: dir }, sink)).toBe(
      1,
    );
    expect(io.err.at(-1)).toMatch(/is not empty: restore only fills an empty DATA_DIR$/);
    await expect(restoreBackup({ service: "event-gallery", dataDir: full }, archive)).rejects.toThrow(
      /is a backup of script-platform, not of event-gallery/,
    );
    expect(await readdir(full).catch(() => [])).toEqual([]);
    expect(await runBackupCommand(["restore", "--to", archive], specOf(h), sink)).toBe(1);
    expect(io.err.at(-1)).toBe("usage: restore --from FILE.tar[.gz]");
    await expect(createBackup(specOf(h), join(dir, "b.zip"))).rejects.toBeInstanceOf(BackupError);

    // A file whose bytes no longer match the manifest.
    const damaged = join(dir, "damaged");
    await mkdir(damaged);
    await writeFile(join(damaged, "secret.key"), "changed");
    await writeFile(
      join(damaged, MANIFEST_NAME),
      JSON.stringify({
        service: "script-platform",
        files: [{ path: "secret.key", size: 7, sha256: "0".repeat(64) }],
      }),
    );
    await tar.create({ file: join(dir, "damaged.tar"), cwd: damaged }, [MANIFEST_NAME, "secret.key"]);
    await expect(
      restoreBackup({ service: "script-platform", dataDir: full }, join(dir, "damaged.tar")),
    ).rejects.toThrow("damaged.tar is damaged: secret.key does not match its checksum");
    expect(await readdir(full).catch(() => [])).toEqual([]);
  });
});
