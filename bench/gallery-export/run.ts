// Gallery.zip build vs a plain copy of the same bytes (bench/gallery-export/measure.ts), measured
// in a process of its own through the harness, which prints the machine and load and writes the
// JSON result. GALLERY_EXPORT_BENCH_MB / GALLERY_EXPORT_BENCH_FILES size the run.
import { startBench } from "../harness/index.js";
import type { ExportFigures } from "./measure.js";

const bench = startBench("gallery-export", "Gallery.zip build by the export worker vs a plain copy + fsync");
const { value: f, cpuS } = await bench.task<ExportFigures>(
  new URL("./measure.ts", import.meta.url),
  "measureExport",
).result;
bench.figure({
  label: `Gallery.zip build, ${f.files} files, ${f.mib.toFixed(0)} MiB`,
  value: f.mib / f.zipS,
  unit: "MiB/s",
  baseline: { label: "plain copy (stream + 1 fsync)", value: f.mib / f.copyS },
  note: `${f.zipS.toFixed(2)} s vs ${f.copyS.toFixed(2)} s, archive ${f.zipMib.toFixed(0)} MiB`,
});
bench.figure({
  label: "peak RSS during the build",
  value: f.peakRssMib,
  unit: "MiB",
  baseline: { label: "before release", value: f.rssBeforeMib },
  note: `process max RSS ${f.maxRssMib.toFixed(0)} MiB; ${cpuS.toFixed(1)} s CPU in the measuring process (generation included)`,
});
bench.note(`originals generated in ${f.generateS.toFixed(1)} s; backend ${f.backend}`);
await bench.finish();
