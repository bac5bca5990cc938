import type { FileHandle } from "node:fs/promises";
import { type Readable, Transform } from "node:stream";
import { crc32 } from "node:zlib";

/**
 * The Memories viewer opens in the language of the guest who downloaded it (issue 14, item 8).
 *
 * Memories.zip is built once per epoch for everyone, so the language cannot be baked into
 * index.html. Instead the archive's first entry is `lang.js`, stored uncompressed with a fixed
 * length (`window.MEMORIES_LANG="--";`, "--" meaning the reader's browser language), and
 * index.html loads it before picking a language. A download for a given language streams the
 * stored archive with three byte ranges replaced: the two language letters and the entry's CRC-32
 * in its data descriptor and in the central directory. Sizes and offsets do not change, so the
 * rest of the file is copied as it is. When the archive does not have exactly that layout (an
 * archive built before this change), it is served unchanged: the viewer then follows the browser.
 */

export type ViewerLang = "en" | "de";
export const VIEWER_LANG_ENTRY = "lang.js";

/** The entry's bytes for a language, or "--" for "the browser's". Always the same length. */
export const viewerLangScript = (lang: ViewerLang | null): Buffer =>
  Buffer.from(`window.MEMORIES_LANG="${lang ?? "--"}";\n`, "ascii");

const VARIANTS = [viewerLangScript(null), viewerLangScript("en"), viewerLangScript("de")];
const LEN = VARIANTS[0]!.length;

const SIG_LOCAL = 0x04034b50;
const SIG_DESCRIPTOR = 0x08074b50;
const SIG_CENTRAL = 0x02014b50;
const SIG_EOCD = 0x06054b50;
const SIG_ZIP64_LOCATOR = 0x07064b50;
const SIG_ZIP64_EOCD = 0x06064b50;

export interface BytePatch {
  offset: number;
  bytes: Buffer;
}

async function readAt(handle: FileHandle, offset: number, length: number): Promise<Buffer | null> {
  if (offset < 0 || length < 0) return null;
  const buf = Buffer.alloc(length);
  const { bytesRead } = await handle.read(buf, 0, length, offset);
  return bytesRead === length ? buf : null;
}

const crcBytes = (crc: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(crc >>> 0, 0);
  return b;
};

/** Where the central directory starts (plain or zip64 end record), or null. */
async function centralDirectoryOffset(handle: FileHandle, size: number): Promise<number | null> {
  // Archives written here carry no zip comment: the end record is the last 22 bytes.
  const eocdAt = size - 22;
  const eocd = await readAt(handle, eocdAt, 22);
  if (!eocd || eocd.readUInt32LE(0) !== SIG_EOCD) return null;
  const offset = eocd.readUInt32LE(16);
  if (offset !== 0xffffffff) return offset;
  const locator = await readAt(handle, eocdAt - 20, 20);
  if (!locator || locator.readUInt32LE(0) !== SIG_ZIP64_LOCATOR) return null;
  const z64At = Number(locator.readBigUInt64LE(8));
  const z64 = await readAt(handle, z64At, 56);
  if (!z64 || z64.readUInt32LE(0) !== SIG_ZIP64_EOCD) return null;
  return Number(z64.readBigUInt64LE(48));
}

/**
 * The patches that make a stored Memories.zip open in `lang`, or null when the archive does not
 * start with a stored `lang.js` of the expected form (it is then served as it is).
 */
export async function viewerLangPatches(
  handle: FileHandle,
  size: number,
  lang: ViewerLang,
): Promise<BytePatch[] | null> {
  const local = await readAt(handle, 0, 30);
  if (!local || local.readUInt32LE(0) !== SIG_LOCAL || local.readUInt16LE(8) !== 0) return null;
  const flags = local.readUInt16LE(6);
  const nameLen = local.readUInt16LE(26);
  const extraLen = local.readUInt16LE(28);
  const name = await readAt(handle, 30, nameLen);
  if (name?.toString("utf8") !== VIEWER_LANG_ENTRY) return null;
  const dataAt = 30 + nameLen + extraLen;
  const data = await readAt(handle, dataAt, LEN);
  if (!data || !VARIANTS.some((v) => v.equals(data))) return null;
  const oldCrc = crc32(data);
  const wanted = viewerLangScript(lang);
  const newCrc = crcBytes(crc32(wanted));
  const patches: BytePatch[] = [{ offset: dataAt, bytes: wanted }];

  // The entry's CRC: in a data descriptor after the data (general purpose bit 3, as yazl writes
  // streamed entries), else in the local header.
  if (flags & 0x0008) {
    const desc = await readAt(handle, dataAt + LEN, 8);
    if (!desc || desc.readUInt32LE(0) !== SIG_DESCRIPTOR || desc.readUInt32LE(4) !== oldCrc) return null;
    patches.push({ offset: dataAt + LEN + 4, bytes: newCrc });
  } else {
    if (local.readUInt32LE(14) !== oldCrc) return null;
    patches.push({ offset: 14, bytes: newCrc });
  }

  const cdAt = await centralDirectoryOffset(handle, size);
  if (cdAt === null) return null;
  const central = await readAt(handle, cdAt, 46 + VIEWER_LANG_ENTRY.length);
  if (
    !central ||
    central.readUInt32LE(0) !== SIG_CENTRAL ||
    central.readUInt32LE(16) !== oldCrc ||
    central.readUInt16LE(28) !== VIEWER_LANG_ENTRY.length ||
    central.readUInt32LE(42) !== 0 ||
    central.subarray(46).toString("utf8") !== VIEWER_LANG_ENTRY
  )
    return null;
  patches.push({ offset: cdAt + 16, bytes: newCrc });
  return patches;
}

/** The file's bytes with the patches applied on the way through (one pass, constant memory). */
export function patchedStream(source: Readable, patches: readonly BytePatch[]): Readable {
  let pos = 0;
  const t = new Transform({
    transform(chunk: Buffer, _enc, done) {
      const start = pos;
      const end = pos + chunk.length;
      pos = end;
      let out = chunk;
      for (const p of patches) {
        const from = Math.max(start, p.offset);
        const to = Math.min(end, p.offset + p.bytes.length);
        if (from >= to) continue;
        if (out === chunk) out = Buffer.from(chunk);
        p.bytes.copy(out, from - start, from - p.offset, to - p.offset);
      }
      done(null, out);
    },
  });
  source.on("error", (err) => t.destroy(err));
  return source.pipe(t);
}

/**
 * The download body of an archive: a Memories.zip for a named language is patched to open in it;
 * anything else is the stored file as it is.
 */
export async function archiveStream(
  handle: FileHandle,
  size: number,
  lang: ViewerLang | undefined,
): Promise<Readable> {
  const patches = lang ? await viewerLangPatches(handle, size, lang).catch(() => null) : null;
  const raw = handle.createReadStream({ start: 0, autoClose: true });
  return patches ? patchedStream(raw, patches) : raw;
}
