/** One sample of a Prometheus text page. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE_RE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?[0-9.eE+-]+|[Nn]a[Nn]|[+-]Inf)$/;
const LABEL_RE = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/gy;
const META_RE = /^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+$/;

/**
 * Parse Prometheus text exposition (format 0.0.4) strictly enough for tests: every line must be a
 * HELP/TYPE comment or a well-formed sample, or this throws naming the line.
 */
export function parsePrometheus(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "") continue;
    if (line.startsWith("#")) {
      if (!META_RE.test(line)) throw new Error(`bad comment line: ${line}`);
      continue;
    }
    const m = SAMPLE_RE.exec(line);
    if (!m) throw new Error(`bad sample line: ${line}`);
    const labels: Record<string, string> = {};
    const body = m[2] ?? "";
    LABEL_RE.lastIndex = 0;
    let consumed = 0;
    for (let l = LABEL_RE.exec(body); l; l = LABEL_RE.exec(body)) {
      labels[l[1] as string] = (l[2] as string).replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
      consumed = LABEL_RE.lastIndex;
    }
    if (consumed !== body.length) throw new Error(`bad labels: ${line}`);
    const raw = m[3] as string;
    const value =
      raw === "+Inf" ? Number.POSITIVE_INFINITY : raw === "-Inf" ? Number.NEGATIVE_INFINITY : Number(raw);
    out.push({ name: m[1] as string, labels, value });
  }
  return out;
}

/** The value of the one sample named `name` whose labels include `labels` (undefined if none). */
export function sampleValue(
  samples: Sample[],
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  return samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    ?.value;
}
