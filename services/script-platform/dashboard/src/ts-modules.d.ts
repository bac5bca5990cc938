// The lib declarations the TypeScript worker needs, read from the compiler package at build time
// (vite.config.ts).
declare module "virtual:ts-libs" {
  const libs: Record<string, string>;
  export default libs;
}

// The compiler's German messages as an asset URL (vite.config.ts alias).
declare module "ts-service-de?url" {
  const url: string;
  export default url;
}
