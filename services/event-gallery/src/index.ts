// `@app/event-gallery`: what code outside the service (bench/, other packages) may use. Everything
// else under src/ is internal; `@app/event-gallery/bench` holds what the benchmarks drive directly.
export { type AppDeps, type BuiltApp, buildApp } from "./app.js";
export { type Config, envSpec } from "./config.js";
