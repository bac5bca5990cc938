import { describeHealth } from "@app/kit/testing/health";
import { buildApp } from "../src/app.js";
import { envSpec } from "../src/config.js";

describeHealth("event-gallery", { buildApp, envSpec, unknownPath: "/api/v1/no/such/thing" });
