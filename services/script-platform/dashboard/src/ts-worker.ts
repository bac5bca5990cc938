/**
 * A TypeScript language service in a web worker: completion (locals included, so
 * `const c = kv.collection("x"); c.` lists the collection's methods) and type errors of the script
 * being edited, against the SDK declarations and the app's module scripts. Runs off the page's
 * thread; the page talks to it through ts-client.ts.
 */

import germanMessages from "ts-service-de?url";
import libs from "virtual:ts-libs";
import ts from "ts-service";
import type { TsReply, TsRequest } from "./ts-protocol.js";

const SDK = "/sdk.d.ts";
const files = new Map<string, { text: string; version: number }>();
for (const [name, text] of Object.entries(libs)) files.set(`/${name}`, { text, version: 1 });
let script = "/script.js";
let modules: string[] = [];

const options: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  // Null checks and the rest of strict, but an unannotated `ctx` is not an error.
  strict: true,
  noImplicitAny: false,
  allowJs: true,
  checkJs: false,
  noEmit: true,
  skipLibCheck: true,
  types: [],
  // `import { x } from "name"` is a module script of the same app.
  paths: { "*": ["/modules/*"] },
};

const put = (name: string, text: string) => {
  const old = files.get(name);
  if (old?.text === text) return;
  files.set(name, { text, version: (old?.version ?? 0) + 1 });
};

const host: ts.LanguageServiceHost = {
  getScriptFileNames: () => [script, SDK, ...modules],
  getScriptVersion: (f) => String(files.get(f)?.version ?? 0),
  getScriptSnapshot: (f) => {
    const x = files.get(f);
    return x ? ts.ScriptSnapshot.fromString(x.text) : undefined;
  },
  getCurrentDirectory: () => "/",
  getCompilationSettings: () => options,
  getDefaultLibFileName: () => "/lib.es2023.d.ts",
  fileExists: (f) => files.has(f),
  readFile: (f) => files.get(f)?.text,
  directoryExists: (d) => d === "/" || d === "/modules",
  getDirectories: () => [],
};
const service = ts.createLanguageService(host, ts.createDocumentRegistry());

const text = (parts: ts.SymbolDisplayPart[] | undefined) => (parts ?? []).map((p) => p.text).join("");

function handle(req: TsRequest): TsReply {
  switch (req.type) {
    case "setup": {
      put(SDK, req.sdk);
      for (const m of modules) files.delete(m);
      modules = req.modules.map((m) => {
        const name = `/modules/${m.name}.${m.language === "typescript" ? "ts" : "js"}`;
        put(name, m.source);
        return name;
      });
      return { id: req.id, type: "ok" };
    }
    case "diagnose": {
      sync(req.source, req.typescript);
      const found = [...service.getSyntacticDiagnostics(script), ...service.getSemanticDiagnostics(script)];
      return {
        id: req.id,
        type: "diagnostics",
        items: found
          .filter((d) => d.category === ts.DiagnosticCategory.Error && d.start !== undefined)
          .map((d) => ({
            from: d.start ?? 0,
            to: (d.start ?? 0) + (d.length ?? 0),
            message: ts.flattenDiagnosticMessageText(d.messageText, "\n"),
            code: d.code,
          })),
      };
    }
    case "complete": {
      sync(req.source, req.typescript);
      const r = service.getCompletionsAtPosition(script, req.pos, {});
      if (!r) return { id: req.id, type: "completions", member: false, items: [] };
      const items = [...r.entries]
        .sort((a, b) => a.sortText.localeCompare(b.sortText))
        .slice(0, 400)
        .map((e) => ({ name: e.name, kind: e.kind, source: e.source ?? null }));
      return { id: req.id, type: "completions", member: r.isMemberCompletion, items };
    }
    case "detail": {
      sync(req.source, req.typescript);
      const d = service.getCompletionEntryDetails(
        script,
        req.pos,
        req.name,
        {},
        req.entrySource ?? undefined,
        {},
        undefined,
      );
      return {
        id: req.id,
        type: "detail",
        signature: text(d?.displayParts),
        doc: text(d?.documentation),
      };
    }
  }
}

function sync(source: string, typescript: boolean) {
  const name = typescript ? "/script.ts" : "/script.js";
  if (name !== script) files.delete(script);
  script = name;
  put(script, source);
}

const scope = self as unknown as {
  onmessage: ((e: MessageEvent<TsRequest>) => Promise<void>) | null;
  postMessage(m: TsReply): void;
};
/** The compiler's own messages in German (its translation, fetched only for a German dashboard). */
async function useGerman(): Promise<void> {
  const text = await fetch(germanMessages).then((r) => (r.ok ? r.text() : null));
  if (!text) return;
  const file = "/ts/de/diagnosticMessages.generated.json";
  ts.validateLocaleAndSetLanguage("de", {
    getExecutingFilePath: () => "/ts/typescript.js",
    resolvePath: (path) => path,
    fileExists: (path) => path === file,
    readFile: (path) => (path === file ? text : undefined),
  });
}

scope.onmessage = async (e) => {
  try {
    if (e.data.type === "setup" && e.data.lang === "de") await useGerman().catch(() => {});
    scope.postMessage(handle(e.data));
  } catch (err) {
    scope.postMessage({ id: e.data.id, type: "failed", message: String((err as Error)?.message ?? err) });
  }
};
