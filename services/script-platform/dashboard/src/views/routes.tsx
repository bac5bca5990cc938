import { useState } from "preact/hooks";
import { ApiError, api, type MatchResult, type Page, type Route, type Script } from "../api.js";
import { t } from "../i18n.js";
import { ConfirmButton, Empty, ErrorNote, Field, Loading, Section, useAction, useResource } from "../ui.js";

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "ANY"];

function describeRoute(r: Route): string {
  const host = r.host_kind === "any" || !r.host ? t("any_host") : r.host;
  return `${r.method} ${r.path} · ${host} · ${r.dispatch_mode}`;
}

export function RoutesPanel({ script }: { script: Script }) {
  const routes = useResource(() => api.get<Page<Route>>(`scripts/${script.id}/routes`), [script.id]);
  const remove = useAction();
  return (
    <>
      <Section title={t("routes")}>
        <Loading resource={routes} />
        {routes.data && routes.data.items.length === 0 && <Empty>{t("no_routes")}</Empty>}
        <ul class="list" data-testid="routes">
          {routes.data?.items.map((r) => (
            <li key={r.id}>
              <code>{describeRoute(r)}</code>
              <ConfirmButton
                label={t("delete")}
                confirm={t("delete_route_confirm", { method: r.method, path: r.path })}
                disabled={remove.busy}
                onConfirm={() =>
                  remove.run(async () => {
                    await api.del(`routes/${r.id}`);
                    routes.reload();
                  })
                }
              />
            </li>
          ))}
        </ul>
        <ErrorNote error={remove.error} />
        <p class="muted small">
          {t("always_reachable")} <code>/api/v1/execute/{script.id}</code>.
        </p>
        <NewRoute scriptId={script.id} onCreated={routes.reload} />
      </Section>
      <MatchTester />
    </>
  );
}

function NewRoute({ scriptId, onCreated }: { scriptId: string; onCreated: () => void }) {
  const [method, setMethod] = useState("GET");
  const [path, setPath] = useState("");
  const [hostKind, setHostKind] = useState<Route["host_kind"]>("any");
  const [host, setHost] = useState("");
  const [mode, setMode] = useState<Route["dispatch_mode"]>("sync");
  const create = useAction();
  const conflict =
    create.error instanceof ApiError && create.error.status === 409
      ? (create.error.body.conflict as Route | undefined)
      : undefined;
  return (
    <form
      class="stack"
      onSubmit={(e) => {
        e.preventDefault();
        create.run(async () => {
          const body: Record<string, unknown> = { host_kind: hostKind, path, method, dispatch_mode: mode };
          if (hostKind !== "any") body.host = host;
          await api.post<Route>(`scripts/${scriptId}/routes`, body);
          setPath("");
          onCreated();
        });
      }}
    >
      <h3>{t("add_route_title")}</h3>
      <div class="grid">
        <Field label={t("method")}>
          <select name="method" value={method} onChange={(e) => setMethod(e.currentTarget.value)}>
            {METHODS.map((m) => (
              <option key={m}>{m}</option>
            ))}
          </select>
        </Field>
        <Field label={t("path")} hint={t("path_hint")}>
          <input name="path" required value={path} onInput={(e) => setPath(e.currentTarget.value)} />
        </Field>
        <Field label={t("host")}>
          <select
            name="host_kind"
            value={hostKind}
            onChange={(e) => setHostKind(e.currentTarget.value as Route["host_kind"])}
          >
            <option value="any">any</option>
            <option value="strict">strict</option>
            <option value="wildcard">wildcard</option>
          </select>
        </Field>
        {hostKind !== "any" && (
          <Field label={t("host_name")}>
            <input
              name="host"
              required
              placeholder={hostKind === "wildcard" ? "*.example.com" : "api.example.com"}
              value={host}
              onInput={(e) => setHost(e.currentTarget.value)}
            />
          </Field>
        )}
        <Field label={t("dispatch")}>
          <select
            name="dispatch_mode"
            value={mode}
            onChange={(e) => setMode(e.currentTarget.value as Route["dispatch_mode"])}
          >
            <option value="sync">sync</option>
            <option value="async">async</option>
          </select>
        </Field>
      </div>
      <ErrorNote error={create.error} />
      {conflict && (
        <p class="error">
          {t("conflicts_with")} <code>{describeRoute(conflict)}</code>
        </p>
      )}
      <button type="submit" class="primary" disabled={create.busy}>
        {t("add_route")}
      </button>
    </form>
  );
}

function MatchTester() {
  const [url, setUrl] = useState(`${location.protocol}//${location.host}/`);
  const [method, setMethod] = useState("GET");
  const [result, setResult] = useState<MatchResult | null>(null);
  const test = useAction();
  return (
    <Section title={t("match_tester")}>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          setResult(null);
          test.run(async () => setResult(await api.post<MatchResult>("routes:match", { url, method })));
        }}
      >
        <div class="row">
          <select aria-label={t("method")} value={method} onChange={(e) => setMethod(e.currentTarget.value)}>
            {METHODS.filter((m) => m !== "ANY").map((m) => (
              <option key={m}>{m}</option>
            ))}
          </select>
          <input
            name="url"
            aria-label={t("url")}
            class="grow"
            required
            value={url}
            onInput={(e) => setUrl(e.currentTarget.value)}
          />
          <button type="submit" disabled={test.busy}>
            {t("test")}
          </button>
        </div>
      </form>
      <ErrorNote error={test.error} />
      {result && (
        <div class="match" data-testid="match-result">
          {result.matched ? (
            <>
              <p class="ok">
                {t("matched")} <code>{describeRoute(result.route)}</code>
              </p>
              <dl>
                <dt>{t("script")}</dt>
                <dd>
                  <code>{result.route.script_id}</code>
                </dd>
                <dt>{t("params")}</dt>
                <dd>
                  <code>{JSON.stringify(result.params)}</code>
                </dd>
                <dt>{t("rest")}</dt>
                <dd>
                  <code>{result.rest === "" ? t("empty_paren") : result.rest}</code>
                </dd>
              </dl>
            </>
          ) : (
            <p class="muted">{t("no_route_matches")}</p>
          )}
        </div>
      )}
    </Section>
  );
}
