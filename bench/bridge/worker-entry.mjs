// Worker bootstrap: on Node 20 a worker does not inherit the TypeScript loader, so it registers
// tsx itself and then imports its TypeScript module.
import { workerData } from "node:worker_threads";
import { register } from "tsx/esm/api";

register();
await import(workerData.entry);
