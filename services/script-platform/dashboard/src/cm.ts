import { javascript } from "@codemirror/lang-javascript";
import { type Diagnostic, lintGutter, setDiagnostics } from "@codemirror/lint";
import { keymap } from "@codemirror/view";
import { basicSetup, EditorView } from "codemirror";
import type { EditorHandle, SourceProblem } from "./editor.js";

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
): EditorHandle & { destroy(): void } {
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
      javascript(),
      lintGutter(),
      EditorView.lineWrapping,
      EditorView.updateListener.of((u) => {
        if (u.docChanged) onChange();
      }),
    ],
  });
  return {
    value: () => view.state.doc.toString(),
    showProblems: (problems) => view.dispatch(setDiagnostics(view.state, toDiagnostics(view, problems))),
    destroy: () => view.destroy(),
  };
}
