// Resumable ingest (tus, issue 13) next to the streamed POST /upload and a plain stream copy of
// the same bytes to the same folder, in one run. The gallery and each client run in their own
// processes (bench/harness); the gallery target and the POST/copy clients are bench/gallery's.
import { median, startBench } from "../harness/index.js";

const MiB = 1024 * 1024;
const BYTES = 128 * MiB;
const COUNT = 3;
const galleryClients = new URL("../gallery/clients.ts", import.meta.url);
const tusClients = new URL("./clients.ts", import.meta.url);

const bench = startBench("gallery-ingest", "resumable (tus) ingest vs POST /upload vs a plain copy");
const gallery = await bench.server(
  "event-gallery",
  new URL("../gallery/target.ts", import.meta.url),
  "startGallery",
);
const join = await fetch(`${gallery.url}/api/v1/join`, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ name: "Ingest Bench" }),
});
const { token } = (await join.json()) as { token: string };
const mbps = (ms: number) => BYTES / MiB / (ms / 1000);

const plain = await bench.task<number[]>(galleryClients, "plainCopies", {
  dir: gallery.info.originals,
  bytes: BYTES,
  count: COUNT,
}).result;
const baseline = { label: "plain stream copy + fsync", value: mbps(median(plain.value)) };

async function measure(label: string, run: () => Promise<number[]>) {
  const cpu0 = await gallery.cpuSeconds();
  const times = await run();
  const cpuMs = (((await gallery.cpuSeconds()) - cpu0) * 1000) / COUNT;
  bench.figure({
    label: `${label}, ${BYTES / MiB} MiB (median of ${COUNT})`,
    value: mbps(median(times)),
    unit: "MiB/s",
    baseline,
    note: `server CPU ${cpuMs.toFixed(0)} ms per upload`,
  });
}

await measure(
  "POST /upload (multipart, one request)",
  async () =>
    (
      await bench.task<number[]>(galleryClients, "uploads", {
        url: gallery.url,
        token,
        bytes: BYTES,
        count: COUNT,
      }).result
    ).value,
);
for (const chunk of [8 * MiB, 64 * MiB])
  await measure(
    `tus, ${chunk / MiB} MiB chunks`,
    async () =>
      (
        await bench.task<number[]>(tusClients, "tusUploads", {
          url: gallery.url,
          token,
          bytes: BYTES,
          count: COUNT,
          chunkBytes: chunk,
        }).result
      ).value,
  );
await bench.finish([gallery]);
