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
describe("derivative lanes", () => {
  let g: Gallery;
  let dir: string;
  beforeAll(async () => {
    g = await startGallery({ env: { GALLERY_DERIVATIVE_WORKERS: "3" } });
    dir = await mkdtemp(join(tmpdir(), "lanes-"));
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
  });
  afterAll(async () => {
    await g.close();
    await rm(dir, { recursive: true, force: true });
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
    const started = async () => (await readdir(dir)).filter((n) => n.startsWith("started-")).length;
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
});
