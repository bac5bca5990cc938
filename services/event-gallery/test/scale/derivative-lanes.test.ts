import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
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
/**
 * A stand-in ffmpeg that appends to `dir/overlap` how many renders run beside it (itself
 * included), then marks its start in `dir`, and renders once `dir/open` exists.
 */
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
    // real-time: a shell script has no event to wait on; it polls its gate file.
    `#!/bin/sh\ntouch "${dir}/running-$$"\nls "${dir}" | grep -c '^running-' >> "${dir}/overlap"\ntouch "${dir}/started-$$"\nwhile [ ! -e "${dir}/open" ]; do sleep 0.05; done\nrm -f "${dir}/running-$$"\nexec cat "${dir}/frame.png"\n`,
  );
  await chmod(script, 0o755);
  return dir;
}

const startedIn = async (dir: string) => (await readdir(dir)).filter((n) => n.startsWith("started-")).length;

/**
 * The most renders that ever ran at once: each start counts the renders running after its own mark,
 * so of several that overlap, the last to start counts them all.
 */
const mostAtOnce = async (dir: string) =>
  Math.max(0, ...(await readFile(join(dir, "overlap"), "utf8")).trim().split("\n").map(Number));

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
    // Three renders (child processes) hold their lanes until the gate opens.
    await expect.poll(() => startedIn(dir)).toBe(3);
    await writeFile(join(dir, "open"), "");
    expect(await run).toBe(5);
    expect(await startedIn(dir)).toBe(5);
    // Never a fourth beside them: a render started while three held their lanes would count four.
    expect(await mostAtOnce(dir)).toBe(3);
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
    await expect.poll(() => startedIn(own)).toBe(4);
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
