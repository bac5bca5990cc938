// `@app/portal-bridge`: what code outside the service (bench/, other packages) may use. Everything
// else under src/ is internal; `@app/portal-bridge/testing` holds the fake portal.
export { type AppDeps, type BuiltApp, buildApp } from "./app.js";
export { type Config, envSpec } from "./config.js";
