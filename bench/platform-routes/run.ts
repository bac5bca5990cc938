// Route table lookups and rebuilds (bench/platform-routes/measure.ts), measured in a process of
// its own through the harness, which prints the machine and load and writes the JSON result.
import { startBench } from "../harness/index.js";
import type { RouteFigures } from "./measure.js";

const bench = startBench(
  "platform-routes",
  "host → app → route lookups on a 10,000-route table, and its rebuild",
);
const { value: f, cpuS } = await bench.task<RouteFigures>(
  new URL("./measure.ts", import.meta.url),
  "measureRoutes",
).result;
bench.figure({ label: "route table rebuild, 10,000 routes (mean of 20)", value: f.buildMs, unit: "ms" });
bench.figure({
  label: "route match",
  value: f.lookupsPerSec,
  unit: "lookups/s",
  note: `${f.usEach.toFixed(2)} µs each, ${f.hits} of ${f.lookups} matched; ${cpuS.toFixed(2)} s CPU in the measuring process`,
});
await bench.finish();
