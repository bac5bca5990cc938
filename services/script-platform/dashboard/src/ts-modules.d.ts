// The lib declarations the TypeScript worker needs, read from the compiler package at build time
// (vite.config.ts).
declare module "virtual:ts-libs" {
  const libs: Record<string, string>;
  export default libs;
}
