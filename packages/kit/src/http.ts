export * from "./http/app.js";
export * from "./http/auth.js";
export * from "./http/range.js";
export * from "./http/server.js";
export * from "./http/sse.js";
