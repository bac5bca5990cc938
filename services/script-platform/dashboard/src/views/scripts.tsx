import type { Script } from "../api.js";
import { qs } from "../api.js";
import { t } from "../i18n.js";
import { Link } from "../router.js";
import { Empty, formatTime, Loading, MoreButton, Section, usePaged } from "../ui.js";

export function ScriptsPage({ appId }: { appId: string }) {
  const scripts = usePaged<Script>((cursor) => `scripts${qs({ app_id: appId, cursor })}`, [appId]);
  return (
    <Section
      title={t("scripts")}
      actions={<Link href={`/apps/${appId}/scripts/new`}>{t("new_script")}</Link>}
    >
      <Loading resource={scripts} />
      {scripts.data && scripts.data.length === 0 && <Empty>{t("no_scripts")}</Empty>}
      <ul class="list">
        {scripts.data?.map((s) => (
          <li key={s.id}>
            <Link href={`/apps/${appId}/scripts/${s.id}`}>
              <strong>{s.name}</strong>
            </Link>
            <span class={`badge ${s.kind}`}>{s.kind}</span>
            <span class="muted small">{formatTime(s.updated_at)}</span>
          </li>
        ))}
      </ul>
      <MoreButton paged={scripts} />
    </Section>
  );
}
