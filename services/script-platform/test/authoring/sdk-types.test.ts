import { createRequire } from "node:module";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SDK_TYPES } from "../../src/sdk/sdk-types.js";
import { type Harness, startHarness } from "../control/harness.js";

// The TypeScript compiler API that ts-blank-space brings (the repo's own typescript@7 is the native
// compiler without a JS API): parse the declarations as a real syntax tree, no regexes.
const ts = createRequire(createRequire(import.meta.url).resolve("ts-blank-space"))(
  "typescript",
) as typeof import("../../../../node_modules/ts-blank-space/node_modules/typescript/lib/typescript.js");

/** interface name → member names, and the declared globals → their interface. */
function declared() {
  const sf = ts.createSourceFile("sdk.d.ts", SDK_TYPES, ts.ScriptTarget.ES2022, true);
  const interfaces = new Map<string, string[]>();
  const globals = new Map<string, string>();
  const functions: string[] = [];
  for (const st of sf.statements) {
    if (ts.isFunctionDeclaration(st) && st.name) functions.push(st.name.text);
    if (ts.isInterfaceDeclaration(st))
      interfaces.set(
        st.name.text,
        st.members.map((m) => (m.name && ts.isIdentifier(m.name) ? m.name.text : "?")).sort(),
      );
    if (ts.isVariableStatement(st))
      for (const d of st.declarationList.declarations)
        if (ts.isIdentifier(d.name) && d.type && ts.isTypeReferenceNode(d.type))
          globals.set(d.name.text, d.type.typeName.getText(sf));
  }
  const diagnostics = (sf as unknown as { parseDiagnostics: unknown[] }).parseDiagnostics;
  return { interfaces, globals, functions, diagnostics };
}

// What the sandbox really exposes, read from inside a run.
const PROBE = `export default function (ctx) {
  const keys = (o) => Object.keys(o).sort();
  return {
    globals: ["log", "kv", "docs", "files", "pubsub", "secrets", "http"].filter((g) => typeof globalThis[g] === "object"),
    Log: keys(log), Kv: keys(kv), KvCollection: keys(kv.collection("c")),
    Docs: keys(docs), DocsCollection: keys(docs.collection("c")),
    Files: keys(files), FilesCollection: keys(files.collection("c")),
    Pubsub: keys(pubsub), Secrets: keys(secrets), Http: keys(http),
    Context: keys(ctx), ScriptRequest: keys(ctx.request),
    functions: Object.getOwnPropertyNames(globalThis).filter((n) => typeof globalThis[n] === "function"),
  };
}`;

describe("SDK declarations match the runtime", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h.close());

  it("parses without errors and declares every global, method and ctx field the sandbox has", async () => {
    const { interfaces, globals, functions, diagnostics } = declared();
    expect(functions.length).toBeGreaterThan(5);
    expect(diagnostics).toEqual([]);
    const app = (await h.call("POST", "/api/v1/admin/apps", { slug: "drift" })).json().id;
    const s = (
      await h.call("POST", "/api/v1/admin/scripts", { app_id: app, name: "probe", source: PROBE })
    ).json();
    const res = await h.call("GET", `/api/v1/execute/${s.id}`);
    expect(res.statusCode).toBe(200);
    const runtime = res.json() as Record<string, string[]>;
    expect([...globals.keys()].sort()).toEqual([...(runtime.globals ?? [])].sort());
    for (const [g, iface] of globals) expect(iface.toLowerCase(), g).toBe(g);
    for (const f of functions) expect(runtime.functions, `declared function ${f}`).toContain(f);
    for (const [name, members] of Object.entries(runtime)) {
      if (name === "globals" || name === "functions") continue;
      expect(interfaces.get(name), `interface ${name}`).toEqual(members);
    }
  });
});
