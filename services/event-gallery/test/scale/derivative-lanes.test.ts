import { chmod, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDerivativeWorker } from "../../src/derivatives/worker.js";
import { type Gallery, startGallery, testMp4, upload, uploadRow } from "../media/helpers.js";

/**
 * GALLERY_DERIVATIVE_WORKERS bounds how many uploads render at once. A stand-in ffmpeg marks each
 * start in a folder and waits for a gate file, so the test sees how many renders overlap.
 */
/** A stand-in ffmpeg that marks each start in `dir` and renders once `dir/open` exists. */
async function standIn(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "lanes-"));
  await writeFile(
    join(dir, "frame.png"),
    await sharp({ create: { width: 8, height: 6, channels: 3, background: "#888" } })
      .png()
      .toBuffer(),
  );
  const script = join(dir, "ffmpeg.sh");
  await writeFile(
    script,
    `#!/bin/sh\ntouch "${dir}/started-$$"\nwhile [ ! -e "${dir}/open" ]; do sleep 0.05; done\nexec cat "${dir}/frame.png"\n`,
  );
  await chmod(script, 0o755);
  return dir;
}

const startedIn = async (dir: string) => (await readdir(dir)).filter((n) => n.startsWith("started-")).length;

describe("derivative lanes", () => {
  let g: Gallery;
  const dirs: string[] = [];
  let dir: string;
  beforeAll(async () => {
    g = await startGallery({ env: { GALLERY_DERIVATIVE_WORKERS: "3" } });
    dir = await standIn();
    dirs.push(dir);
  });
  afterAll(async () => {
    await g.close();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it("renders GALLERY_DERIVATIVE_WORKERS uploads at once, never more, and all of them", async () => {
    expect(g.built.ctx.config.GALLERY_DERIVATIVE_WORKERS).toBe(3);
    const guest = await g.join("Lane Guest");
    const mp4 = await testMp4();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await upload(g, guest.token, mp4, [["client_upload_id", `lane-${i}`]], "video/mp4");
      expect(res.statusCode, res.body).toBe(201);
      ids.push(res.json().upload.id);
    }
    const w = createDerivativeWorker(g.built.ctx, {
      video: { ffmpegPath: join(dir, "ffmpeg.sh"), ffprobePath: null, timeoutMs: 120_000 },
    });
    const run = w.processPending();
    const started = () => startedIn(dir);
    // Wait (bounded, real time: child processes) until three renders are running.
    for (let i = 0; i < 400 && (await started()) < 3; i++) await new Promise((r) => setTimeout(r, 25));
    expect(await started()).toBe(3);
    // Nothing else starts while they hold their lanes (a negative check: a short real wait).
    await new Promise((r) => setTimeout(r, 300));
    expect(await started()).toBe(3);
    await writeFile(join(dir, "open"), "");
    expect(await run).toBe(5);
    expect(await started()).toBe(5);
    for (const id of ids) expect((await uploadRow(g, id)).compression_status).toBe("done");
  });

  it("two workers on one database (as two processes) never render one upload twice", async () => {
    const own = await standIn();
    dirs.push(own);
    const guest = await g.join("Two Workers");
    const mp4 = await testMp4();
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await upload(g, guest.token, mp4, [["client_upload_id", `two-${i}`]], "video/mp4");
      expect(res.statusCode, res.body).toBe(201);
      ids.push(res.json().upload.id);
    }
    const video = { ffmpegPath: join(own, "ffmpeg.sh"), ffprobePath: null, timeoutMs: 120_000 };
    const a = createDerivativeWorker(g.built.ctx, { concurrency: 2, video });
    const b = createDerivativeWorker(g.built.ctx, { concurrency: 2, video });
    const runs = [a.processPending(), b.processPending()];
    for (let i = 0; i < 400 && (await startedIn(own)) < 4; i++) await new Promise((r) => setTimeout(r, 25));
    await writeFile(join(own, "open"), "");
    const [na, nb] = await Promise.all(runs);
    expect((na ?? 0) + (nb ?? 0)).toBe(6);
    expect(await startedIn(own)).toBe(6);
    for (const id of ids) {
      const row = await uploadRow(g, id);
      expect(row.compression_status).toBe("done");
      expect(row.derivative_lease_until).toBeNull();
    }
  });

  it("a claim whose lease lapsed (its process died mid-render) is taken again; a live one is not", async () => {
    const own = await standIn();
    dirs.push(own);
    await writeFile(join(own, "open"), "");
    const guest = await g.join("Lapsed Lease");
    const res = await upload(g, guest.token, await testMp4(), [["client_upload_id", "lapsed"]], "video/mp4");
    expect(res.statusCode, res.body).toBe(201);
    const id = res.json().upload.id;
    // A worker of a process that then died: claimed (attempt 1, leased), never finished.
    const db = g.built.ctx.database.db;
    await db
      .updateTable("uploads")
      .set({ derivative_attempts: 1, derivative_lease_until: g.clock.now() + 60_000 })
      .where("id", "=", id)
      .execute();
    const w = createDerivativeWorker(g.built.ctx, {
      video: { ffmpegPath: join(own, "ffmpeg.sh"), ffprobePath: null, timeoutMs: 120_000 },
    });
    expect(await w.processPending()).toBe(0);
    expect((await uploadRow(g, id)).compression_status).toBe("processing");
    await g.clock.advance(60_000);
    expect(await w.processPending()).toBe(1);
    expect(await uploadRow(g, id)).toMatchObject({ compression_status: "done", derivative_attempts: 0 });
  });
});
