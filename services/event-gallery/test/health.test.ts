import { describeHealth } from "@app/kit/testing/health";
import { buildApp } from "../src/app.js";
import { envSpec } from "../src/config.js";
import { GALLERY_VERSION } from "../src/version.js";

describeHealth("event-gallery", {
  buildApp,
  envSpec,
  build: { metricsName: "gallery", version: GALLERY_VERSION },
  unknownPath: "/api/v1/no/such/thing",
});
