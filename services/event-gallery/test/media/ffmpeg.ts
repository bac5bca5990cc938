import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * Real media made by ffmpeg from one of its generated sources (e.g. `testsrc=duration=1:size=320x240`),
 * encoded with `outputArgs` into a file of type `ext`, returned as bytes.
 */
export async function ffmpegFromSource(source: string, outputArgs: string[], ext: string): Promise<Buffer> {
  const dir = await mkdtemp(join(tmpdir(), "eg-ffmpeg-"));
  const out = join(dir, `out.${ext}`);
  try {
    await run("ffmpeg", [
      "-hide_banner",
      "-loglevel",
      "error",
      "-f",
      "lavfi",
      "-i",
      source,
      ...outputArgs,
      "-y",
      out,
    ]);
    return await readFile(out);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
