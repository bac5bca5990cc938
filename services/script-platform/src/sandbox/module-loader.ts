import { parse } from "acorn";
import type { ScriptRecord } from "../control/scripts-repository.js";
import { ScriptVisibleError } from "./engine.js";
import { Lru } from "./lru.js";

export const MAX_IMPORT_DEPTH = 8;

export interface ModuleSource {
  byName(appId: string, name: string): Promise<ScriptRecord | null>;
}

/** Names a module's source imports or re-exports from (`import x from "name"`, `export * from "name"`). */
export function importNames(source: string): string[] {
  const ast = parse(source, { ecmaVersion: "latest", sourceType: "module" });
  const out = new Set<string>();
  for (const node of ast.body) {
    if (
      (node.type === "ImportDeclaration" ||
        node.type === "ExportAllDeclaration" ||
        node.type === "ExportNamedDeclaration") &&
      node.source &&
      typeof node.source.value === "string"
    )
      out.add(node.source.value);
  }
  return [...out];
}

export type ModuleResolver = ReturnType<typeof createModuleResolver>;

/**
 * Resolves the modules an endpoint imports, in the caller's app only, before the run starts (the
 * engine's loader is synchronous). The parsed import list of each script version is kept in a
 * bounded LRU keyed by script id + updated_at, so an edit is picked up at once and a hot script
 * is not re-parsed. Cycles, missing modules, endpoint imports and chains deeper than 8 are script
 * errors (control rejects them at save time; this guards against later edits and deletes).
 */
export function createModuleResolver(deps: { scripts: ModuleSource; cacheSize: number }) {
  const { scripts } = deps;
  const cache = new Lru<string, string[]>(deps.cacheSize);

  function importsOf(script: Pick<ScriptRecord, "id" | "updated_at" | "source">): string[] {
    const key = `${script.id}@${script.updated_at}`;
    let names = cache.get(key);
    if (!names) {
      try {
        names = importNames(script.source);
      } catch {
        throw new ScriptVisibleError("SyntaxError: the script source does not parse.");
      }
      cache.set(key, names);
    }
    return names;
  }

  /** Module name → source for everything `entry` imports, transitively. */
  async function resolve(entry: ScriptRecord): Promise<Map<string, string>> {
    const modules = new Map<string, string>();
    // Most scripts of a hot route import nothing: no walk to set up for those.
    if (importsOf(entry).length === 0) return modules;
    const visit = async (script: ScriptRecord, chain: string[]): Promise<void> => {
      for (const name of importsOf(script)) {
        if (chain.includes(name))
          throw new ScriptVisibleError(`Import cycle: ${[...chain, name].join(" → ")}.`);
        if (modules.has(name)) continue;
        if (chain.length >= MAX_IMPORT_DEPTH + 1)
          throw new ScriptVisibleError(
            `Import chain deeper than ${MAX_IMPORT_DEPTH}: ${[...chain, name].join(" → ")}.`,
          );
        const mod = await scripts.byName(entry.app_id, name);
        if (mod?.kind !== "module")
          throw new ScriptVisibleError(`Module "${name}" is not a module script of this app.`);
        modules.set(name, mod.source);
        await visit(mod, [...chain, name]);
      }
    };
    await visit(entry, [entry.name]);
    return modules;
  }

  return {
    get cachedEntries(): number {
      return cache.size;
    },
    importsOf,
    resolve,
  };
}
