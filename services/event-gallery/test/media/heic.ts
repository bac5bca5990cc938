import { ffmpegFromSource } from "./ffmpeg.js";

/**
 * A real HEIC still image: ffmpeg's x265 encodes one frame, and this wraps the bitstream in the
 * minimal HEIF item structure (ftyp heic, meta with hdlr/pitm/iloc/iinf/iprp, mdat) that libheif
 * reads. The prebuilt sharp has no HEVC decoder, so this exercises the WASM decoder path.
 */
export async function makeHeic(width: number, height: number): Promise<Buffer> {
  const stdout = await ffmpegFromSource(
    `testsrc=size=${width}x${height}`,
    [
      "-frames:v",
      "1",
      "-c:v",
      "libx265",
      "-x265-params",
      "log-level=error",
      "-pix_fmt",
      "yuv420p",
      "-f",
      "hevc",
    ],
    "hevc",
  );
  const nals = splitAnnexB(stdout);
  const type = (n: Buffer) => ((n[0] ?? 0) >> 1) & 0x3f;
  const vps = nals.filter((n) => type(n) === 32);
  const sps = nals.filter((n) => type(n) === 33);
  const pps = nals.filter((n) => type(n) === 34);
  const slices = nals.filter((n) => type(n) < 32);
  const firstVps = vps[0];
  if (!firstVps || sps.length === 0 || pps.length === 0 || slices.length === 0)
    throw new Error("unexpected HEVC bitstream");
  // profile_tier_level sits at a fixed place in the VPS payload (after the 2-byte NAL header and 4 bytes).
  const rbsp = stripEmulationPrevention(firstVps.subarray(2));
  const ptl = rbsp.subarray(4, 16);

  const u8 = (v: number) => Buffer.from([v & 0xff]);
  const u16 = (v: number) => Buffer.from([(v >> 8) & 0xff, v & 0xff]);
  const u32 = (v: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(v);
    return b;
  };
  const box = (t: string, ...parts: Buffer[]) => {
    const body = Buffer.concat(parts);
    return Buffer.concat([u32(body.length + 8), Buffer.from(t, "latin1"), body]);
  };
  const full = (t: string, version: number, flags: number, ...parts: Buffer[]) =>
    box(t, u8(version), Buffer.from([(flags >> 16) & 0xff, (flags >> 8) & 0xff, flags & 0xff]), ...parts);

  const nalArray = (nalType: number, list: Buffer[]) =>
    Buffer.concat([u8(0x80 | nalType), u16(list.length), ...list.flatMap((n) => [u16(n.length), n])]);
  const hvcC = box(
    "hvcC",
    u8(1),
    ptl,
    u16(0xf000),
    u8(0xfc),
    u8(0xfc | 1), // 4:2:0
    u8(0xf8),
    u8(0xf8),
    u16(0),
    u8(0x0f), // one temporal layer, nested, 4-byte NAL lengths
    u8(3),
    nalArray(32, vps),
    nalArray(33, sps),
    nalArray(34, pps),
  );
  const ispe = full("ispe", 0, 0, u32(width), u32(height));
  const data = Buffer.concat(slices.flatMap((n) => [u32(n.length), n]));

  const ftyp = box("ftyp", Buffer.from("heic"), u32(0), Buffer.from("mif1heic"));
  const metaFor = (offset: number) =>
    full(
      "meta",
      0,
      0,
      full("hdlr", 0, 0, u32(0), Buffer.from("pict"), Buffer.alloc(12), u8(0)),
      full("pitm", 0, 0, u16(1)),
      full("iloc", 0, 0, u8(0x44), u8(0x00), u16(1), u16(1), u16(0), u16(1), u32(offset), u32(data.length)),
      full("iinf", 0, 0, u16(1), full("infe", 2, 0, u16(1), u16(0), Buffer.from("hvc1"), u8(0))),
      box("iprp", box("ipco", hvcC, ispe), full("ipma", 0, 0, u32(1), u16(1), u8(2), u8(0x81), u8(0x02))),
    );
  // The iloc offset points into mdat, whose position depends on the meta box's own size.
  const metaSize = metaFor(0).length;
  const offset = ftyp.length + metaSize + 8;
  return Buffer.concat([ftyp, metaFor(offset), box("mdat", data)]);
}

function splitAnnexB(stream: Buffer): Buffer[] {
  const starts: number[] = [];
  for (let i = 0; i + 2 < stream.length; i++)
    if (stream[i] === 0 && stream[i + 1] === 0 && stream[i + 2] === 1) {
      starts.push(i + 3);
      i += 2;
    }
  return starts.map((s, k) => {
    let end = k + 1 < starts.length ? (starts[k + 1] as number) - 3 : stream.length;
    while (end > s && stream[end - 1] === 0) end--;
    return stream.subarray(s, end);
  });
}

/** Drop emulation-prevention bytes (00 00 03 → 00 00). */
function stripEmulationPrevention(b: Buffer): Buffer {
  const out: number[] = [];
  for (let i = 0; i < b.length; i++) {
    if (i >= 2 && b[i] === 3 && b[i - 1] === 0 && b[i - 2] === 0) continue;
    out.push(b[i] as number);
  }
  return Buffer.from(out);
}
