import { readFileSync } from "node:fs";
import { migrations } from "./db/migrations/index.js";

/** Script SDK version, MAJOR.MINOR (ctx.sdk_version). The guardrail checks its shape. */
export const SDK_VERSION = "1.7";
/** HTTP API major: served under /api/v1. */
export const API_MAJOR = 1;
/** Inter-service wire version (reserved for cluster mode). */
export const WIRE_VERSION = 1;

/** The product version is the service package's version (src/ and dist/ both sit one level down). */
export const PRODUCT_VERSION: string = (
  JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
).version;

/** The latest migration number. */
export const SCHEMA_VERSION: number = migrations.reduce((max, m) => Math.max(max, m.version), 0);
