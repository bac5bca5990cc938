import { ensureWebBuilt } from "./web-dist.js";

/**
 * Vitest global setup of the gallery project: the web app is built once before any test file runs
 * (test files run in parallel, and several serve web/dist).
 */
export default ensureWebBuilt;
