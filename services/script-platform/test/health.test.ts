import { describeHealth } from "@app/kit/testing/health";
import { buildApp } from "../src/app.js";
import { envSpec } from "../src/config.js";
import { PRODUCT_VERSION } from "../src/version.js";

describeHealth("script-platform", {
  buildApp,
  envSpec,
  build: { metricsName: "platform", version: PRODUCT_VERSION },
  unknownPath: "/no/such/thing",
});
