// The tus client of the ingest bench, run by the harness in its own process (bench.task).
import { randomBytes } from "node:crypto";
import sharp from "sharp";
import { Upload } from "tus-js-client";

const MiB = 1024 * 1024;

/**
 * `count` resumable uploads of `bytes` each over tus-js-client (as the web app sends them), one
 * after the other, in `chunkBytes` PATCHes; returns each upload's time from creation to the
 * committing 201 (ms).
 */
export async function tusUploads(args: {
  url: string;
  token: string;
  bytes: number;
  count: number;
  chunkBytes: number;
}): Promise<number[]> {
  const head = await sharp({ create: { width: 16, height: 16, channels: 3, background: "#888" } })
    .jpeg()
    .toBuffer();
  const filler = randomBytes(MiB);
  const data = Buffer.alloc(args.bytes);
  head.copy(data, 0);
  for (let at = head.length; at < args.bytes; at += MiB)
    filler.copy(data, at, 0, Math.min(MiB, args.bytes - at));
  const once = (n: number) =>
    new Promise<number>((resolve, reject) => {
      const t0 = performance.now();
      const upload = new Upload(data, {
        endpoint: `${args.url}/api/v1/uploads`,
        chunkSize: args.chunkBytes,
        retryDelays: [],
        headers: { authorization: `Bearer ${args.token}` },
        metadata: { client_upload_id: `bench-${args.chunkBytes}-${n}-${randomBytes(4).toString("hex")}` },
        onError: reject,
        onSuccess({ lastResponse }) {
          if (lastResponse.getStatus() !== 201) reject(new Error(`tus ${lastResponse.getStatus()}`));
          else resolve(performance.now() - t0);
        },
      });
      upload.start();
    });
  const times: number[] = [];
  for (let i = 0; i < args.count; i++) times.push(await once(i));
  return times;
}
