import { useRef, useState } from "preact/hooks";
import { ApiError, api, type Script, type ScriptKind } from "../api.js";
import { CodeEditor, type EditorHandle, type SourceProblem } from "../editor.js";
import { t, tn } from "../i18n.js";
import { Link, navigate } from "../router.js";
import {
  ConfirmButton,
  ErrorNote,
  Field,
  Loading,
  parseJsonField,
  Section,
  useAction,
  useResource,
} from "../ui.js";
import { RunPanel, VersionsPanel } from "./authoring.js";
import { RoutesPanel } from "./routes.js";

const NEW_SOURCE = `export default async function (ctx) {
  log.info("hello from", ctx.request.path);
  return { statusCode: 200, body: { hello: ctx.request.query.name ?? "world" } };
}
`;
const NEW_TS_SOURCE = `export default async function (ctx: Context): Promise<ScriptResponse> {
  log.info("hello from", ctx.request?.path);
  return { statusCode: 200, body: { hello: ctx.request?.query.name ?? "world" } };
}
`;
type Language = "javascript" | "typescript";

/** The list shows "Line N, column C:" itself: drop the same location from the server's sentence. */
export function withoutLocation(message: string): string {
  return message
    .replace(/^Line \d+(, column \d+)?: /, "")
    .replace(/^(Syntax error|TypeScript) at line \d+, column \d+: /, "$1: ");
}

/** The line-bearing problems of a 422 answer: `{line, column?}` on the error or an `errors` list. */
export function problemsFrom(err: unknown): SourceProblem[] {
  if (!(err instanceof ApiError) || err.status !== 422) return [];
  const body = err.body;
  const list = Array.isArray(body.errors) ? (body.errors as Array<Record<string, unknown>>) : [body];
  return list.flatMap((e) =>
    typeof e.line === "number"
      ? [
          {
            line: e.line,
            column: typeof e.column === "number" ? e.column : undefined,
            message: withoutLocation(typeof e.message === "string" ? e.message : body.message),
          },
        ]
      : [],
  );
}

export function ScriptEditorPage({ appId, scriptId }: { appId: string; scriptId: string | null }) {
  const script = useResource(
    () => (scriptId ? api.get<Script>(`scripts/${scriptId}`) : Promise.resolve(null)),
    [scriptId],
  );
  const [restored, setRestored] = useState<Script | null>(null);
  if (!script.data && script.data !== null) return <Loading resource={script} />;
  const current =
    restored &&
    script.data &&
    restored.version !== undefined &&
    restored.version >= (script.data.version ?? 0)
      ? restored
      : script.data;
  // A restore remounts the form (keyed by the restored version) so the editor shows that source.
  return (
    <>
      <ScriptForm key={restored?.version ?? 0} appId={appId} script={current} onSaved={script.reload} />
      {current && (
        <VersionsPanel
          script={current}
          onRestored={(s) => {
            setRestored(s);
            script.reload();
          }}
        />
      )}
      {current && <RoutesPanel script={current} />}
    </>
  );
}

function ScriptForm({
  appId,
  script,
  onSaved,
}: {
  appId: string;
  script: Script | null;
  onSaved: () => void;
}) {
  const editor = useRef<EditorHandle | null>(null);
  const form = useRef<HTMLFormElement>(null);
  const [name, setName] = useState(script?.name ?? "");
  const [kind, setKind] = useState<ScriptKind>(script?.kind ?? "endpoint");
  const [language, setLanguage] = useState<Language>(script?.language ?? "javascript");
  const [description, setDescription] = useState(script?.description ?? "");
  const [timeout, setTimeoutText] = useState(script?.timeout_seconds ? String(script.timeout_seconds) : "");
  const [sandbox, setSandbox] = useState(
    script?.sandbox && Object.keys(script.sandbox).length > 0 ? JSON.stringify(script.sandbox, null, 2) : "",
  );
  const [problems, setProblems] = useState<SourceProblem[]>([]);
  const [typeErrors, setTypeErrors] = useState<SourceProblem[]>([]);
  const [saved, setSaved] = useState(false);
  // Every save starts the Run panel afresh: a result of the text before the save would mislead.
  const [saves, setSaves] = useState(0);
  const save = useAction();
  const remove = useAction();

  const onSave = (e: Event) => {
    e.preventDefault();
    setSaved(false);
    save.run(async () => {
      const body: Record<string, unknown> = {
        name,
        kind,
        language,
        source: editor.current?.value() ?? "",
        description,
        sandbox: parseJsonField(t("sandbox"), sandbox) ?? {},
      };
      if (timeout.trim() !== "") body.timeout_seconds = Number(timeout);
      try {
        const result = script
          ? await api.put<Script>(`scripts/${script.id}`, body)
          : await api.post<Script>("scripts", { app_id: appId, ...body });
        setProblems([]);
        editor.current?.showProblems([]);
        setSaved(true);
        setSaves((n) => n + 1);
        if (script) onSaved();
        else navigate(`/apps/${appId}/scripts/${result.id}`, true);
      } catch (err) {
        const found = problemsFrom(err);
        setProblems(found);
        editor.current?.showProblems(found);
        throw err;
      }
    });
  };

  return (
    <Section
      title={script ? t("script_title", { name: script.name }) : t("new_script")}
      actions={<Link href={`/apps/${appId}/scripts`}>{t("all_scripts")}</Link>}
    >
      <form class="stack" onSubmit={onSave} ref={form}>
        <div class="grid">
          <Field label={t("name")}>
            <input name="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </Field>
          <Field label={t("kind")}>
            <select name="kind" value={kind} onChange={(e) => setKind(e.currentTarget.value as ScriptKind)}>
              <option value="endpoint">endpoint</option>
              <option value="module">module</option>
            </select>
          </Field>
          <Field label={t("language")} hint={t("language_hint")}>
            <select
              name="language"
              value={language}
              onChange={(e) => {
                const next = e.currentTarget.value as Language;
                setLanguage(next);
                // A new script still holding the starter text gets the starter of the other language.
                const text = editor.current?.value();
                if (!script && (text === NEW_SOURCE || text === NEW_TS_SOURCE))
                  editor.current?.setValue(next === "typescript" ? NEW_TS_SOURCE : NEW_SOURCE);
              }}
            >
              <option value="javascript">JavaScript</option>
              <option value="typescript">TypeScript</option>
            </select>
          </Field>
          <Field label={t("timeout")} hint={t("timeout_hint")}>
            <input
              name="timeout_seconds"
              type="number"
              min="1"
              max="300"
              value={timeout}
              onInput={(e) => setTimeoutText(e.currentTarget.value)}
            />
          </Field>
        </div>
        <Field label={t("description")}>
          <input
            name="description"
            value={description}
            onInput={(e) => setDescription(e.currentTarget.value)}
          />
        </Field>
        <div class="field">
          <span>
            {t("source")} <small class="muted">{t("source_hint")}</small>{" "}
            <Link href="/sdk">{t("sdk_reference")}</Link>
            {script?.version ? <small class="muted"> · {t("version_n", { n: script.version })}</small> : null}
          </span>
          <CodeEditor
            typescript={language === "typescript"}
            appId={appId}
            onTypeErrors={setTypeErrors}
            initial={script?.source ?? NEW_SOURCE}
            onReady={(h) => {
              editor.current = h;
            }}
            onChange={() => setSaved(false)}
            onSave={() => form.current?.requestSubmit()}
          />
        </div>
        {language === "typescript" && typeErrors.length > 0 && (
          <div class="type-errors" data-testid="type-errors" role="status">
            <strong>{tn("type_errors", typeErrors.length)}</strong>{" "}
            <span class="muted small">{t("type_errors_hint")}</span>
            <ul class="problems">
              {typeErrors.slice(0, 5).map((p) => (
                <li key={`${p.line}:${p.column}:${p.message}`}>
                  {t("line_n", { n: p.line })}
                  {p.column ? t("column_n", { n: p.column }) : ""}: {p.message}
                </li>
              ))}
            </ul>
          </div>
        )}
        <Field label={t("sandbox")} hint={t("sandbox_hint")}>
          <textarea
            name="sandbox"
            rows={3}
            spellcheck={false}
            placeholder='{"max_operations": 1000000}'
            value={sandbox}
            onInput={(e) => setSandbox(e.currentTarget.value)}
          />
        </Field>
        {problems.length > 0 && (
          <ul class="problems" data-testid="source-problems" role="alert" aria-label={t("not_saved")}>
            {problems.map((p) => (
              <li key={`${p.line}:${p.column}:${p.message}`}>
                {t("line_n", { n: p.line })}
                {p.column ? t("column_n", { n: p.column }) : ""}: {p.message}
              </li>
            ))}
          </ul>
        )}
        {/* With line problems listed above, the same message again would only repeat them. */}
        {problems.length === 0 && <ErrorNote error={save.error} />}
        {saved && !save.busy && <p class="ok">{t("saved")}</p>}
        <div class="row">
          <button type="submit" class="primary" disabled={save.busy}>
            {save.busy ? t("saving") : script ? t("save") : t("create_script")}
          </button>
          {script && (
            <ConfirmButton
              label={t("delete_script")}
              confirm={t("delete_script_confirm", { name: script.name })}
              disabled={remove.busy}
              onConfirm={() =>
                remove.run(async () => {
                  await api.del(`scripts/${script.id}`);
                  navigate(`/apps/${appId}/scripts`);
                })
              }
            />
          )}
        </div>
        <ErrorNote error={remove.error} />
      </form>
      {script && script.kind === "endpoint" && (
        <RunPanel key={saves} script={script} editor={editor} language={language} />
      )}
    </Section>
  );
}
