// The image's HEALTHCHECK: /readyz of the gallery and the platform (database answers, migrations
// current), /healthz of the bridge (its /readyz reports the upstream portal, which is not the
// container's health). Which services run is read from PID 1's command line (tini -- entry MODE).
import { readFileSync } from "node:fs";

const args = readFileSync("/proc/1/cmdline", "utf8").split("\0");
const mode = ["gallery", "platform", "bridge", "all"].find((m) => args.includes(m)) ?? "all";
const env = process.env;
const probes = {
  gallery: [env.PORT ?? "3001", "/readyz"],
  platform: [env.PORT ?? "3002", "/readyz"],
  bridge: [env.PORT ?? "3003", "/healthz"],
};
const targets =
  mode === "all"
    ? [
        [env.GALLERY_PORT ?? "3001", "/readyz"],
        [env.PLATFORM_PORT ?? "3002", "/readyz"],
        [env.BRIDGE_PORT ?? "3003", "/healthz"],
      ]
    : [probes[mode]];

let failed = false;
for (const [port, path] of targets) {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(4000) });
    if (res.status !== 200) {
      failed = true;
      console.log(`${path} on ${port}: ${res.status} ${await res.text()}`);
    }
  } catch (err) {
    failed = true;
    console.log(`${path} on ${port}: ${err.message}`);
  }
}
process.exit(failed ? 1 : 0);
