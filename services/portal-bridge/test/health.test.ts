import { describeHealth } from "@app/kit/testing/health";
import { buildApp } from "../src/app.js";
import { envSpec } from "../src/config.js";

describeHealth("portal-bridge", { buildApp, envSpec, unknownPath: "/no/such/thing" });
