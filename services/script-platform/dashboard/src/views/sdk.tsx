import { Fragment } from "preact";
import { t } from "../i18n.js";
import { loadSdk, type SdkModel } from "../sdk-model.js";
import { ErrorNote, Loading, Section, useResource } from "../ui.js";

/** Order of the reference: globals first, then what they return, then ctx and its events. */
const GROUPS: Array<[string, string[]]> = [
  [t("grp_handler"), ["Context", "ScriptRequest", "ScriptEvent", "ScriptResponse"]],
  [
    t("grp_events"),
    ["KvEvent", "DocsEvent", "FilesEvent", "PubsubEvent", "CronEvent", "EmailEvent", "DeadLetterEvent"],
  ],
  [t("grp_logging"), ["Log"]],
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
        {t("sdk_intro_1")} <code>export default async function (ctx) {"{ … }"}</code>. {t("sdk_intro_2")}{" "}
        <code>import {"{ x }"} from "my-module"</code>. {t("sdk_intro_3")}{" "}
        <a href="/api/v1/sdk/types.d.ts">/api/v1/sdk/types.d.ts</a> {t("sdk_intro_4")}
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
        <summary>{t("sdk_declarations")}</summary>
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
      <h1>{t("sdk_title")}</h1>
      <Reference model={sdk.data} />
    </>
  );
}
