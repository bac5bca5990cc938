import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import variantModule from "@jitl/quickjs-wasmfile-release-sync";
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
} from "quickjs-emscripten-core";

// The package ships CommonJS typings; under NodeNext the default import is typed as the module
// object while at run time it is the variant itself (or carries it as `default`).
const variant = ((variantModule as unknown as { default?: QuickJSSyncVariant }).default ??
  variantModule) as QuickJSSyncVariant;

let loading: Promise<QuickJSWASMModule> | null = null;

/**
 * The one QuickJS WebAssembly module of this thread, loaded on first use. Every execution gets
 * its own runtime and context from it (engine.ts); the module itself holds no script state.
 * A sandbox worker passes the WebAssembly.Module the pool compiled once (compiled code is shared
 * between threads), so a replacement worker starts without compiling QuickJS again.
 */
export function quickJS(compiled?: WebAssembly.Module): Promise<QuickJSWASMModule> {
  loading ??= newQuickJSWASMModuleFromVariant(
    compiled ? newVariant(variant, { wasmModule: compiled }) : variant,
  ).catch((err) => {
    loading = null;
    throw err;
  });
  return loading;
}

/** Compile the QuickJS WebAssembly binary once (the pool hands the result to every worker). */
export async function compileQuickJS(): Promise<WebAssembly.Module> {
  const file = createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm");
  // The global exists at run time; this project's TypeScript libs declare only its types.
  const wasm = (
    globalThis as unknown as { WebAssembly: { compile(b: Uint8Array): Promise<WebAssembly.Module> } }
  ).WebAssembly;
  return wasm.compile(await readFile(file));
}
