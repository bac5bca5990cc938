import variantModule from "@jitl/quickjs-wasmfile-release-sync";
import {
  newQuickJSWASMModuleFromVariant,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
} from "quickjs-emscripten-core";

// The package ships CommonJS typings; under NodeNext the default import is typed as the module
// object while at run time it is the variant itself (or carries it as `default`).
const variant = ((variantModule as unknown as { default?: QuickJSSyncVariant }).default ??
  variantModule) as QuickJSSyncVariant;

let loading: Promise<QuickJSWASMModule> | null = null;

/**
 * The one QuickJS WebAssembly module of this process, loaded on first use. Every execution gets
 * its own runtime and context from it (engine.ts); the module itself holds no script state.
 */
export function quickJS(): Promise<QuickJSWASMModule> {
  loading ??= newQuickJSWASMModuleFromVariant(variant).catch((err) => {
    loading = null;
    throw err;
  });
  return loading;
}
