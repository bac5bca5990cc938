import type { Completion, CompletionContext, CompletionResult } from "@codemirror/autocomplete";
import { javascript, javascriptLanguage, typescriptLanguage } from "@codemirror/lang-javascript";
import { type Diagnostic, linter, lintGutter, setDiagnostics } from "@codemirror/lint";
import { Compartment } from "@codemirror/state";
import { hoverTooltip, keymap } from "@codemirror/view";
import { basicSetup, EditorView } from "codemirror";
import type { EditorHandle, SourceProblem } from "./editor.js";
import { chainBefore, loadSdk, resolveChain, type SdkMember, type SdkModel } from "./sdk-model.js";
import { TsClient } from "./ts-client.js";
import type { TsReply } from "./ts-protocol.js";

function infoOf(m: { signature: string; doc: string }): () => Node {
  return () => {
    const el = document.createElement("div");
    el.className = "cm-sdk-info";
    const code = document.createElement("code");
    code.textContent = m.signature;
    el.append(code);
    if (m.doc) {
      const p = document.createElement("p");
      p.textContent = m.doc;
      el.append(p);
    }
    return el;
  };
}

/** Completion from the SDK declarations: globals (kv, docs, ctx…) and members along a chain. */
export function sdkCompletions(model: SdkModel) {
  return (context: CompletionContext): CompletionResult | null => {
    const line = context.state.doc.lineAt(context.pos);
    const found = chainBefore(line.text.slice(0, context.pos - line.from));
    if (!found) return null;
    const from = context.pos - found.word.length;
    if (found.chain.length === 0) {
      if (!found.word && !context.explicit) return null;
      const options: Completion[] = [...model.globals].map(([name, g]) => ({
        label: name,
        type: "variable",
        detail: g.type,
        info: infoOf({ signature: `${name}: ${g.type}`, doc: g.doc }),
      }));
      return { from, options, validFor: /^[\w$]*$/ };
    }
    const iface = resolveChain(model, found.chain);
    if (!iface) return null;
    const options: Completion[] = iface.members.map((m: SdkMember) => ({
      label: m.name,
      type: m.method ? "method" : "property",
      detail: m.signature.slice(m.name.length).replace(/^\?/, ""),
      info: infoOf(m),
      ...(m.method ? { apply: `${m.name}(` } : {}),
    }));
    return { from, options, validFor: /^[\w$]*$/ };
  };
}

const KIND_TYPES: Record<string, string> = {
  method: "method",
  function: "function",
  property: "property",
  getter: "property",
  var: "variable",
  let: "variable",
  const: "constant",
  "local var": "variable",
  parameter: "variable",
  class: "class",
  interface: "interface",
  type: "type",
  keyword: "keyword",
  module: "namespace",
  enum: "enum",
};

/**
 * Completion from the TypeScript worker: it knows the types of local variables (`const c =
 * kv.collection("x")`, then `c.`), imports and the SDK. Where it has nothing to offer after a `.`
 * (an unannotated `ctx` is `any` to it), the SDK model's chain completion answers instead.
 */
export function tsCompletions(ts: TsClient, typescript: () => boolean, fallback: () => SdkModel | null) {
  return async (context: CompletionContext): Promise<CompletionResult | null> => {
    const word = context.matchBefore(/[\w$]*/);
    const from = word ? word.from : context.pos;
    const before = context.state.sliceDoc(Math.max(0, from - 1), from);
    if (!context.explicit && before !== "." && (!word || word.from === word.to)) return null;
    const source = context.state.doc.toString();
    const reply: TsReply = await ts
      .request({ type: "complete", source, typescript: typescript(), pos: context.pos })
      .catch(() => ({ id: 0, type: "failed", message: "" }));
    const model = fallback();
    // "warning" entries are every identifier of a JavaScript file, typed or not: noise after a `.`.
    const items = reply.type === "completions" ? reply.items.filter((item) => item.kind !== "warning") : [];
    if (reply.type !== "completions" || (reply.member && items.length === 0))
      return model ? sdkCompletions(model)(context) : null;
    if (context.aborted) return null;
    const options: Completion[] = items.map((item) => ({
      label: item.name,
      type: KIND_TYPES[item.kind] ?? "text",
      ...(item.kind === "method" || item.kind === "function" ? { apply: `${item.name}(` } : {}),
      info: async () => {
        const d = await ts.request({
          type: "detail",
          source,
          typescript: typescript(),
          pos: context.pos,
          name: item.name,
          entrySource: item.source,
        });
        if (d.type !== "detail" || !d.signature) return null;
        return infoOf({ signature: d.signature, doc: d.doc })();
      },
    }));
    return { from, options, validFor: /^[\w$]*$/ };
  };
}

/** Hover over an SDK name shows its declaration and doc line. */
export function sdkHover(model: SdkModel) {
  return hoverTooltip((view, pos) => {
    const line = view.state.doc.lineAt(pos);
    let end = pos - line.from;
    while (end < line.text.length && /[\w$]/.test(line.text[end] as string)) end++;
    const found = chainBefore(line.text.slice(0, end));
    if (!found?.word) return null;
    let member: { signature: string; doc: string } | undefined;
    if (found.chain.length === 0) {
      const g = model.globals.get(found.word);
      if (g) member = { signature: `${found.word}: ${g.type}`, doc: g.doc };
    } else member = resolveChain(model, found.chain)?.members.find((m) => m.name === found.word);
    if (!member) return null;
    const info = infoOf(member);
    return {
      pos: line.from + end - found.word.length,
      end: line.from + end,
      above: true,
      create: () => ({ dom: info() as HTMLElement }),
    };
  });
}

/** Turn server-reported problems into CodeMirror diagnostics covering the reported line. */
export function toDiagnostics(view: EditorView, problems: SourceProblem[]): Diagnostic[] {
  const doc = view.state.doc;
  return problems.map((p) => {
    const line = doc.line(Math.min(Math.max(1, Math.trunc(p.line)), doc.lines));
    const from =
      p.column && p.column > 0 ? Math.min(line.from + Math.trunc(p.column) - 1, line.to) : line.from;
    return { from, to: Math.max(from, line.to), severity: "error", message: p.message, source: "server" };
  });
}

/** Where an editor reports the type errors the worker found (line and column 1-based). */
export type TypeErrorsListener = (problems: SourceProblem[]) => void;

/** CodeMirror lives in its own chunk: only the script page pays for it. */
export function createEditor(
  parent: HTMLElement,
  doc: string,
  onChange: () => void,
  onSave: () => void,
  typescript = false,
  services: { appId?: string | undefined; onTypeErrors?: TypeErrorsListener | undefined } = {},
): EditorHandle & { destroy(): void } {
  const language = new Compartment();
  const sdk = new Compartment();
  const checks = new Compartment();
  let isTs = typescript;
  const sdkModel = loadSdk();
  let model: SdkModel | null = null;
  const worker = services.appId
    ? new TsClient(
        services.appId,
        sdkModel.then((m) => m.source),
      )
    : null;
  const report = (problems: SourceProblem[]) => services.onTypeErrors?.(problems);
  // Problems the server reported (a draft run's error line) stay marked while the text they were
  // reported for is unchanged: the type-check's answer, which may arrive later, adds to them.
  let serverProblems: { source: string; problems: SourceProblem[] } | null = null;
  const stillServerProblems = (view: EditorView, source: string): Diagnostic[] =>
    serverProblems && serverProblems.source === source ? toDiagnostics(view, serverProblems.problems) : [];
  // Type errors before save, for TypeScript only (JavaScript gets completion from the worker, not checks).
  const typeCheck = (ts: boolean) =>
    ts && worker
      ? linter(
          async (view) => {
            const source = view.state.doc.toString();
            const r = await worker.request({ type: "diagnose", source, typescript: true });
            if (r.type !== "diagnostics" || view.state.doc.toString() !== source)
              return stillServerProblems(view, view.state.doc.toString());
            const doc = view.state.doc;
            report(
              r.items.map((d) => {
                const line = doc.lineAt(Math.min(d.from, doc.length));
                return { line: line.number, column: d.from - line.from + 1, message: d.message };
              }),
            );
            return [
              ...r.items.map(
                (d): Diagnostic => ({
                  from: Math.min(d.from, doc.length),
                  to: Math.min(Math.max(d.to, d.from), doc.length),
                  severity: "error",
                  message: d.message,
                  source: "TypeScript",
                }),
              ),
              ...stillServerProblems(view, source),
            ];
          },
          { delay: 400 },
        )
      : [];
  const lang = (ts: boolean) => javascript({ typescript: ts });
  const view = new EditorView({
    doc,
    parent,
    extensions: [
      // Before basicSetup so Mod-s saves the script instead of the browser saving the page.
      keymap.of([
        {
          key: "Mod-s",
          run: () => {
            onSave();
            return true;
          },
        },
      ]),
      basicSetup,
      language.of(lang(typescript)),
      sdk.of([]),
      checks.of(typeCheck(typescript)),
      lintGutter(),
      EditorView.lineWrapping,
      EditorView.updateListener.of((u) => {
        if (u.docChanged) onChange();
      }),
    ],
  });
  // Completion and hover arrive with the declarations; the editor works without them meanwhile.
  sdkModel.then(
    (loaded) => {
      model = loaded;
      const complete = worker
        ? tsCompletions(
            worker,
            () => isTs,
            () => model,
          )
        : sdkCompletions(loaded);
      view.dispatch({
        effects: sdk.reconfigure([
          javascriptLanguage.data.of({ autocomplete: complete }),
          typescriptLanguage.data.of({ autocomplete: complete }),
          sdkHover(loaded),
        ]),
      });
    },
    () => {},
  );
  return {
    setTypeScript: (ts: boolean) => {
      isTs = ts;
      if (!ts) report([]);
      view.dispatch({ effects: [language.reconfigure(lang(ts)), checks.reconfigure(typeCheck(ts))] });
    },
    setValue: (text: string) =>
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } }),
    value: () => view.state.doc.toString(),
    showProblems: (problems) => {
      serverProblems = problems.length > 0 ? { source: view.state.doc.toString(), problems } : null;
      view.dispatch(setDiagnostics(view.state, toDiagnostics(view, problems)));
    },
    destroy: () => {
      view.destroy();
      worker?.destroy();
    },
  };
}
