import { Fragment } from "preact";
import { loadSdk, type SdkModel } from "../sdk-model.js";
import { ErrorNote, Loading, Section, useResource } from "../ui.js";

/** Order of the reference: globals first, then what they return, then ctx and its events. */
const GROUPS: Array<[string, string[]]> = [
  ["Handler argument", ["Context", "ScriptRequest", "ScriptEvent", "ScriptResponse"]],
  [
    "Trigger events (ctx.event.<kind>)",
    ["KvEvent", "DocsEvent", "FilesEvent", "PubsubEvent", "CronEvent", "EmailEvent", "DeadLetterEvent"],
  ],
  ["Logging", ["Log"]],
  ["kv", ["Kv", "KvCollection"]],
  ["docs", ["Docs", "DocsCollection", "Doc"]],
  ["files", ["Files", "FilesCollection", "FileMeta"]],
  ["pubsub", ["Pubsub"]],
  ["secrets", ["Secrets"]],
  ["http", ["Http", "HttpOptions", "HttpResult"]],
];

function Reference({ model }: { model: SdkModel }) {
  const globalOf = new Map([...model.globals].map(([name, g]) => [g.type, name]));
  return (
    <div class="sdk" data-testid="sdk-reference">
      <p>
        Every script runs with these globals. An endpoint's default export is the handler:{" "}
        <code>export default async function (ctx) {"{ … }"}</code>. Imports name module scripts of the same
        app: <code>import {"{ x }"} from "my-module"</code>. The same declarations are served at{" "}
        <a href="/api/v1/sdk/types.d.ts">/api/v1/sdk/types.d.ts</a> for your own editor.
      </p>
      {GROUPS.map(([title, names]) => (
        <Section key={title} title={title}>
          {names.map((n) => {
            const iface = model.interfaces.get(n);
            if (!iface) return null;
            const global = globalOf.get(n);
            return (
              <div key={n} id={`sdk-${n}`}>
                <h3>
                  {global ? <code>{global}</code> : <code>{n}</code>}
                  {global && <span class="muted"> : {n}</span>}
                </h3>
                {iface.doc && <p>{iface.doc}</p>}
                <dl>
                  {iface.members.map((m) => (
                    <Fragment key={`${n}.${m.name}`}>
                      <dt>
                        <code>{m.signature}</code>
                      </dt>
                      {m.doc && <dd>{m.doc}</dd>}
                    </Fragment>
                  ))}
                </dl>
              </div>
            );
          })}
        </Section>
      ))}
      <details>
        <summary>The declarations as served</summary>
        <pre>{model.source}</pre>
      </details>
    </div>
  );
}

/** The SDK reference, rendered from the platform's TypeScript declarations. */
export function SdkPage() {
  const sdk = useResource(loadSdk, []);
  if (!sdk.data) return sdk.error ? <ErrorNote error={sdk.error} /> : <Loading resource={sdk} />;
  return (
    <>
      <h1>Script SDK</h1>
      <Reference model={sdk.data} />
    </>
  );
}
