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
  onReady: (handle: EditorHandle) => void;
  onChange?: () => void;
  onSave?: () => void;
  typescript?: boolean;
}) {
  const host = useRef<HTMLDivElement>(null);
  const onChange = useRef(props.onChange);
  onChange.current = props.onChange;
  const onSave = useRef(props.onSave);
  onSave.current = props.onSave;
  const [failed, setFailed] = useState<unknown>(null);
  useEffect(() => {
    let editor: { destroy(): void } | null = null;
    let gone = false;
    import("./cm.js").then(
      ({ createEditor }) => {
        if (gone || !host.current) return;
        const created = createEditor(
          host.current,
          props.initial,
          () => onChange.current?.(),
          () => onSave.current?.(),
          props.typescript === true,
        );
        editor = created;
        props.onReady(created);
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
