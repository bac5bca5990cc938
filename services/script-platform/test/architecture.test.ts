import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// The capabilities import each other one way (issue #10 item 6: dispatch/, triggers/ and
// execution/ used to form a nine-node cycle with config, context, control, realtime, sandbox and
// sdk). Each top-level file (app.ts, context.ts, config.ts…) counts as its own node; app.ts is
// the composition root, which imports everything and is imported by nothing.
const SRC = fileURLToPath(new URL("../src", import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [p] : [];
  });
}

/** Relative imports of a file (static, re-exports, type-only and dynamic), resolved to .ts files. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const specs = [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)"(\.{1,2}\/[^"]+)"/g)].map(
    (m) => m[1] ?? "",
  );
  return specs
    .map((s) => resolve(dirname(file), s.replace(/\.js$/, ".ts")))
    .map((p) => (existsSync(p) ? p : join(p.replace(/\.ts$/, ""), "index.ts")))
    .filter((p) => existsSync(p));
}

const nodeOf = (file: string) => {
  const rel = relative(SRC, file);
  return rel.includes("/") ? dirname(rel) : rel;
};

/** Strongly connected components with more than one node (Tarjan). */
function cycles(graph: Map<string, Set<string>>): string[][] {
  let index = 0;
  const stack: string[] = [];
  const on = new Set<string>();
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const out: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v) ?? 0, idx.get(w) ?? 0));
    }
    if (low.get(v) === idx.get(v)) {
      const c: string[] = [];
      let w: string | undefined;
      do {
        w = stack.pop();
        if (w !== undefined) {
          on.delete(w);
          c.push(w);
        }
      } while (w !== undefined && w !== v);
      if (c.length > 1) out.push(c.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return out;
}

describe("module structure of src/", () => {
  const files = sources(SRC);
  const fileGraph = new Map(
    files.map((f) => [relative(SRC, f), new Set(importsOf(f).map((i) => relative(SRC, i)))]),
  );
  const folderGraph = new Map<string, Set<string>>();
  for (const [f, deps] of fileGraph) {
    const from = nodeOf(join(SRC, f));
    const set = folderGraph.get(from) ?? new Set<string>();
    for (const d of deps) if (nodeOf(join(SRC, d)) !== from) set.add(nodeOf(join(SRC, d)));
    folderGraph.set(from, set);
  }

  it("reads the imports it checks", () => {
    expect(files.length).toBeGreaterThan(100);
    expect(fileGraph.get("app.ts")).toContain("dispatch/dispatch.ts");
    expect(fileGraph.get("dispatch/dispatcher.ts")).toContain("dispatch/job.ts");
  });

  it("has no import cycle between files", () => {
    expect(cycles(fileGraph)).toEqual([]);
  });

  it("has no import cycle between capabilities (folders; each top-level file on its own)", () => {
    expect(cycles(folderGraph)).toEqual([]);
  });

  it("keeps dispatch/ below execution/ and triggers/ the trigger model", () => {
    expect(folderGraph.get("dispatch")).not.toContain("execution");
    expect(folderGraph.get("triggers")).not.toContain("dispatch");
    expect(folderGraph.get("triggers")).not.toContain("execution");
    expect(folderGraph.get("sdk")).not.toContain("dispatch");
    expect(folderGraph.get("config.ts") ?? new Set()).toEqual(new Set());
  });
});
