import { describeHealth } from "@app/kit/testing/health";
import { buildApp } from "../src/app.js";
import { envSpec } from "../src/config.js";
import { BRIDGE_VERSION } from "../src/version.js";

describeHealth("portal-bridge", {
  buildApp,
  envSpec,
  build: { metricsName: "bridge", version: BRIDGE_VERSION },
  unknownPath: "/no/such/thing",
});
