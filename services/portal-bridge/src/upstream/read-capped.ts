/**
 * Reads a response body into memory up to `cap` bytes (UPSTREAM_MAX_BYTES); beyond it the body
 * is cancelled and `tooLarge()` is thrown, so one odd answer cannot exhaust the bridge's memory.
 */
export async function readCapped(res: Response, cap: number, tooLarge: () => Error): Promise<string> {
  const declared = Number(res.headers.get("content-length") ?? Number.NaN);
  if (declared > cap) {
    await res.body?.cancel().catch(() => undefined);
    throw tooLarge();
  }
  if (!res.body) return "";
  // A declared length frames the body (the HTTP parser reads no more), so it can be read whole.
  if (Number.isFinite(declared)) return res.text();
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > cap) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}
