import type { Completion, CompletionContext, CompletionResult } from "@codemirror/autocomplete";
import { javascript, javascriptLanguage, typescriptLanguage } from "@codemirror/lang-javascript";
import { type Diagnostic, lintGutter, setDiagnostics } from "@codemirror/lint";
import { Compartment } from "@codemirror/state";
import { hoverTooltip, keymap } from "@codemirror/view";
import { basicSetup, EditorView } from "codemirror";
import type { EditorHandle, SourceProblem } from "./editor.js";
import { chainBefore, loadSdk, resolveChain, type SdkMember, type SdkModel } from "./sdk-model.js";

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

/** CodeMirror lives in its own chunk: only the script page pays for it. */
export function createEditor(
  parent: HTMLElement,
  doc: string,
  onChange: () => void,
  onSave: () => void,
  typescript = false,
): EditorHandle & { destroy(): void } {
  const language = new Compartment();
  const sdk = new Compartment();
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
      lintGutter(),
      EditorView.lineWrapping,
      EditorView.updateListener.of((u) => {
        if (u.docChanged) onChange();
      }),
    ],
  });
  // Completion and hover arrive with the declarations; the editor works without them meanwhile.
  loadSdk().then(
    (model) =>
      view.dispatch({
        effects: sdk.reconfigure([
          javascriptLanguage.data.of({ autocomplete: sdkCompletions(model) }),
          typescriptLanguage.data.of({ autocomplete: sdkCompletions(model) }),
          sdkHover(model),
        ]),
      }),
    () => {},
  );
  return {
    setTypeScript: (ts: boolean) => view.dispatch({ effects: language.reconfigure(lang(ts)) }),
    setValue: (text: string) =>
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } }),
    value: () => view.state.doc.toString(),
    showProblems: (problems) => view.dispatch(setDiagnostics(view.state, toDiagnostics(view, problems))),
    destroy: () => view.destroy(),
  };
}
