import { useEffect, useRef, useState } from "preact/hooks";
import { ErrorNote } from "./ui.js";

/** A problem the server reported for a saved source: 1-based line, optional 1-based column. */
export interface SourceProblem {
  line: number;
  column?: number | undefined;
  message: string;
}

export interface EditorHandle {
  value(): string;
  /** Replace the whole text (a restored or viewed version). */
  setValue(text: string): void;
  setTypeScript(on: boolean): void;
  showProblems(problems: SourceProblem[]): void;
}

export function CodeEditor(props: {
  initial: string;
  /** Called at once: the handle keeps the text and problems until CodeMirror has loaded. */
  onReady: (handle: EditorHandle) => void;
  onChange?: () => void;
  onSave?: () => void;
  typescript?: boolean;
  /** The app whose module scripts imports resolve to (TypeScript worker). */
  appId?: string;
  /** Type errors of the current text (TypeScript only), before any save. */
  onTypeErrors?: (problems: SourceProblem[]) => void;
}) {
  const host = useRef<HTMLDivElement>(null);
  const onChange = useRef(props.onChange);
  onChange.current = props.onChange;
  const onSave = useRef(props.onSave);
  onSave.current = props.onSave;
  const onTypeErrors = useRef(props.onTypeErrors);
  onTypeErrors.current = props.onTypeErrors;
  const [failed, setFailed] = useState<unknown>(null);
  // The language may change while the editor's chunk still loads: the editor takes the latest.
  const typescript = useRef(props.typescript === true);
  typescript.current = props.typescript === true;
  const handle = useRef<EditorHandle | null>(null);
  useEffect(() => {
    handle.current?.setTypeScript(props.typescript === true);
  }, [props.typescript]);
  useEffect(() => {
    let editor: { destroy(): void } | null = null;
    let gone = false;
    // CodeMirror's chunk may load after the page already saves, runs or reports problems: until
    // then the page's handle keeps the text (the initial one or the last set) and the problems
    // to show, so a save sends that text, not nothing, and a run's error line is still marked.
    let text = props.initial;
    let problems: SourceProblem[] = [];
    props.onReady({
      value: () => (handle.current ? handle.current.value() : text),
      setValue: (next) => {
        if (handle.current) handle.current.setValue(next);
        else text = next;
      },
      setTypeScript: (on) => handle.current?.setTypeScript(on),
      showProblems: (next) => {
        if (handle.current) handle.current.showProblems(next);
        else problems = next;
      },
    });
    import("./cm.js").then(
      ({ createEditor }) => {
        if (gone || !host.current) return;
        const created = createEditor(
          host.current,
          text,
          () => onChange.current?.(),
          () => onSave.current?.(),
          typescript.current,
          { appId: props.appId, onTypeErrors: (p) => onTypeErrors.current?.(p) },
        );
        editor = created;
        handle.current = created;
        if (problems.length > 0) created.showProblems(problems);
      },
      (err) => setFailed(err),
    );
    return () => {
      gone = true;
      editor?.destroy();
    };
  }, []);
  return (
    <>
      <div class="editor" ref={host} data-testid="source-editor" />
      <ErrorNote error={failed} />
    </>
  );
}
