/**
 * The first-run banner: a few plain lines on stdout once the server listens, also when logs are
 * JSON, so an operator sees where the service is and how to log in without reading log fields.
 * A generated password appears here only (never in a log line, which may be shipped elsewhere).
 */
export interface BannerInfo {
  service: string;
  version: string;
  url: string;
  /** `label: text` rows, e.g. ["Log in", "http://…/admin as \"Admin\""]. */
  rows: readonly (readonly [string, string])[];
}

export function formatBanner(info: BannerInfo): string {
  const rows: [string, string][] = [
    ["URL", info.url],
    ...info.rows.map(([k, v]) => [k, v] as [string, string]),
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  const body = rows.map(([k, v]) => `  ${`${k}:`.padEnd(width + 1)} ${v}`);
  const title = `${info.service} ${info.version} is running`;
  const rule = "-".repeat(Math.min(100, Math.max(title.length, ...body.map((l) => l.length)) + 2));
  return `${[rule, ` ${title}`, ...body, rule].join("\n")}\n`;
}
