/**
 * The SDK as the dashboard knows it: read from the platform's own declarations
 * (GET /api/v1/sdk/types.d.ts, the one source of truth) and turned into a small model for the
 * SDK reference page, editor completion and hover. The declarations follow one fixed layout
 * (one member per line, one-line JSDoc above), so a line reader is enough here; the server-side
 * drift test parses the same text with the TypeScript compiler.
 */

export interface SdkMember {
  name: string;
  /** The member's declaration as written, without the trailing `;`. */
  signature: string;
  doc: string;
  /** The interface a call or read of this member yields, when it is one (for `a.b().c` chains). */
  yields: string | null;
  method: boolean;
}

export interface SdkInterface {
  name: string;
  doc: string;
  members: SdkMember[];
}

export interface SdkModel {
  interfaces: Map<string, SdkInterface>;
  /** Global name → interface (`kv` → `Kv`), plus `ctx` → `Context` by convention. */
  globals: Map<string, { type: string; doc: string }>;
  source: string;
}

const DOC_LINE = /^\s*\/\*\*\s*(.*?)\s*\*\/\s*$/;

export function parseSdk(source: string): SdkModel {
  const interfaces = new Map<string, SdkInterface>();
  const globals = new Map<string, { type: string; doc: string }>();
  let doc = "";
  let current: SdkInterface | null = null;
  // `type ScriptEvent = | { kv: KvEvent } | ...`: one synthetic interface whose members are the kinds.
  let union: SdkInterface | null = null;
  for (const raw of source.split("\n")) {
    const line = raw.trim();
    const d = DOC_LINE.exec(raw);
    if (d) {
      doc = d[1] ?? "";
      continue;
    }
    if (union) {
      const m = /^\|\s*\{\s*(\w+)\s*:\s*(\w+)\s*\}\s*;?$/.exec(line);
      if (m) {
        union.members.push({
          name: m[1] as string,
          signature: `${m[1]}: ${m[2]}`,
          doc: interfaces.get(m[2] as string)?.doc ?? "",
          yields: m[2] as string,
          method: false,
        });
        continue;
      }
      union = null;
    }
    const iface = /^interface\s+(\w+)(?:<[^>]*>)?\s*\{$/.exec(line);
    if (iface) {
      current = { name: iface[1] as string, doc, members: [] };
      interfaces.set(current.name, current);
      doc = "";
      continue;
    }
    const alias = /^type\s+(\w+)\s*=\s*$/.exec(line);
    if (alias) {
      union = { name: alias[1] as string, doc, members: [] };
      interfaces.set(union.name, union);
      doc = "";
      continue;
    }
    const glob = /^declare\s+const\s+(\w+)\s*:\s*(\w+)\s*;$/.exec(line);
    if (glob) {
      globals.set(glob[1] as string, {
        type: glob[2] as string,
        doc: interfaces.get(glob[2] as string)?.doc ?? "",
      });
      continue;
    }
    if (current) {
      if (line === "}") {
        current = null;
        continue;
      }
      const member = /^(\w+)(\??)(\(|\s*:)/.exec(line);
      if (member) {
        const signature = line.replace(/;$/, "");
        const method = member[3] === "(";
        // Type after the last top-level `):` (methods) or the first `:` (properties).
        const type = method
          ? signature.slice(signature.lastIndexOf("):") + 2)
          : signature.slice(signature.indexOf(":") + 1);
        const named = /^\s*(\w+)(?:\s*\|\s*null)?\s*$/.exec(type);
        current.members.push({
          name: member[1] as string,
          signature,
          doc,
          yields: named ? (named[1] as string) : null,
          method,
        });
      }
      doc = "";
    }
  }
  if (interfaces.has("Context"))
    globals.set("ctx", { type: "Context", doc: interfaces.get("Context")?.doc ?? "" });
  return { interfaces, globals, source };
}

/**
 * The interface an expression chain like `kv.collection("x")` or `ctx.event.kv` evaluates to,
 * or null when it is not known.
 */
export function resolveChain(model: SdkModel, chain: string[]): SdkInterface | null {
  const [head, ...rest] = chain;
  if (!head) return null;
  let type = model.globals.get(head)?.type ?? null;
  for (const part of rest) {
    const iface = type ? model.interfaces.get(type) : undefined;
    const member = iface?.members.find((m) => m.name === part);
    type = member?.yields ?? null;
    if (!type) return null;
  }
  return type ? (model.interfaces.get(type) ?? null) : null;
}

/** The property chain before the cursor: `kv.collection("a").ge` → {chain: ["kv","collection"], word: "ge"}. */
export function chainBefore(text: string): { chain: string[]; word: string } | null {
  const m = /((?:[A-Za-z_$][\w$]*(?:\([^()]*\))?\s*\??\.\s*)*)([A-Za-z_$][\w$]*)?$/.exec(text);
  if (!m) return null;
  const prefix = m[1] ?? "";
  const chain = prefix
    .split(/\??\./)
    .map((p) => p.replace(/\([^()]*\)/, "").trim())
    .filter((p) => p !== "");
  return { chain, word: m[2] ?? "" };
}

let loaded: Promise<SdkModel> | null = null;

/** The declarations, fetched once per page load. */
export function loadSdk(): Promise<SdkModel> {
  loaded ??= fetch("/api/v1/sdk/types.d.ts")
    .then((r) => {
      if (!r.ok) throw new Error(`The SDK declarations could not be loaded (${r.status}).`);
      return r.text();
    })
    .then(parseSdk);
  loaded.catch(() => {
    loaded = null;
  });
  return loaded;
}
