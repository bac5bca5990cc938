/** Worker thread: the fake portal on its own event loop (bench/bridge/run.ts). */
import { parentPort } from "node:worker_threads";
import { systemClock } from "@app/kit/clock";
import { FakePortal } from "../../services/portal-bridge/test/fakes/portal.js";

const portal = new FakePortal(systemClock);
await portal.start();
// The bench runs far longer than the idle window would allow without requests, but every call
// slides it; the session simply stays alive.
const token = portal.login({ userId: "u1", accountId: "a1" });
parentPort?.postMessage({ url: portal.url, token });
parentPort?.on("message", async (m) => {
  if (m === "stop") {
    await portal.stop();
    process.exit(0);
  }
});
