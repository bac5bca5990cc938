import { createReadStream, createWriteStream } from "node:fs";
import { stat } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { crc32 } from "node:zlib";
import yazl from "yazl";
import { publishDurably, removeQuietly, tempPathFor } from "./files.js";

/**
 * yazl checksums every byte with buffer-crc32's table loop, the bottleneck of a multi-GB
 * Gallery.zip; Node's native zlib.crc32 computes the same value many times faster (README, Keepsake).
 * Swap it into yazl's own copy of the module (same continuation semantics: previous CRC in, CRC out).
 */
{
  const require = createRequire(import.meta.url);
  const crcModule = require(
    require.resolve("buffer-crc32", { paths: [dirname(require.resolve("yazl"))] }),
  ) as {
    unsigned: (buf: Buffer, previous?: number) => number;
  };
  crcModule.unsigned = (buf, previous) => crc32(buf, typeof previous === "number" ? previous : 0);
}

/** One archive entry: bytes from a file on disk or from memory. */
export type ArchiveEntry =
  | { name: string; file: string; size: number; mtime?: Date; compress?: boolean }
  | { name: string; buffer: Buffer; mtime?: Date; compress?: boolean };

export interface WriteArchiveOptions {
  /** Folder the archive lands in; the temp file is written next to it (same filesystem). */
  dir: string;
  fileName: string;
  entries: readonly ArchiveEntry[];
  /**
   * Called before each entry is read, with the bytes written so far. Throwing aborts the archive
   * (the builder uses this to check the epoch between entries and to report progress).
   */
  beforeEntry?: (index: number, doneBytes: number, totalBytes: number) => Promise<void>;
  /** Aborting stops at once, also in the middle of a large entry (shutdown must not wait on it). */
  signal?: AbortSignal;
}

const entrySize = (e: ArchiveEntry) => ("file" in e ? e.size : e.buffer.length);

/**
 * Write a zip with yazl to a temp file, fsync it, rename it into place and fsync the folder.
 * Any failure removes the temp file; on success the returned path is durable.
 */
export async function writeArchive(opts: WriteArchiveOptions): Promise<{ path: string; size: number }> {
  const finalPath = join(opts.dir, opts.fileName);
  const tmp = tempPathFor(finalPath);
  const total = opts.entries.reduce((n, e) => n + entrySize(e), 0);
  const zip = new yazl.ZipFile();
  let failure: unknown = null;
  let done = 0;
  let reading: Readable | null = null;
  zip.on("error", (err) => {
    failure ??= err;
    // Ends the pipeline below, which closes the temp file, and stops reading the current source.
    (zip.outputStream as unknown as { destroy(e: unknown): void }).destroy(err);
    reading?.destroy();
  });
  const onAbort = () => zip.emit("error", opts.signal?.reason ?? new Error("aborted"));
  opts.signal?.addEventListener("abort", onAbort, { once: true });

  opts.entries.forEach((entry, index) => {
    const options = {
      ...(entry.mtime ? { mtime: entry.mtime } : {}),
      // Photos and videos are already compressed; deflating them costs CPU for nothing.
      compress: entry.compress ?? false,
    };
    if ("buffer" in entry) {
      zip.addReadStreamLazy(entry.name, options, (cb) => {
        step(index, () => Readable.from([entry.buffer])).then(
          (s) => cb(null, s),
          (err) => cb(err, undefined as never),
        );
      });
    } else {
      // No declared size: a derivative replaced (atomically) after the listing must not break the
      // archive, so yazl takes the size from the bytes it actually reads.
      zip.addReadStreamLazy(entry.name, options, (cb) => {
        step(index, () => createReadStream(entry.file)).then(
          (s) => cb(null, s),
          (err) => cb(err, undefined as never),
        );
      });
    }
  });

  async function step(index: number, makeStream: () => Readable): Promise<Readable> {
    await opts.beforeEntry?.(index, done, total);
    if (failure) throw failure;
    const entry = opts.entries[index]!;
    const s = makeStream();
    reading = s;
    s.on("end", () => {
      done += entrySize(entry);
    });
    s.on("error", (err) => zip.emit("error", err));
    return s;
  }

  zip.end();
  try {
    await pipeline(zip.outputStream, createWriteStream(tmp, { flags: "wx" })).catch((err) => {
      throw failure ?? err;
    });
    if (failure) throw failure;
    await publishDurably(tmp, finalPath);
  } catch (err) {
    await removeQuietly(tmp);
    throw err;
  } finally {
    opts.signal?.removeEventListener("abort", onAbort);
  }
  const size = (await stat(finalPath)).size;
  return { path: finalPath, size };
}
