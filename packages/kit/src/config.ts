import { z } from "zod";

/**
 * Environment configuration: one zod schema per variable, with a description. The same spec
 * validates start-up (one clear line naming the variable and the rule, never the value) and
 * prints `--help`.
 */
export interface EnvVar<T extends z.ZodType = z.ZodType> {
  schema: T;
  description: string;
  secret: boolean;
  defaultText: string | undefined;
}

export type EnvSpec = Record<string, EnvVar>;
export type EnvValues<S extends EnvSpec> = { [K in keyof S]: z.output<S[K]["schema"]> };

export function envVar<T extends z.ZodType>(
  schema: T,
  description: string,
  opts: { secret?: boolean; defaultText?: string } = {},
): EnvVar<T> {
  return { schema, description, secret: opts.secret ?? false, defaultText: opts.defaultText };
}

export class ConfigError extends Error {
  readonly variable: string;
  readonly rule: string;
  constructor(variable: string, rule: string) {
    super(`Invalid configuration: ${variable} ${rule}`);
    this.name = "ConfigError";
    this.variable = variable;
    this.rule = rule;
  }
}

/** Turn a zod issue into a rule sentence that cannot contain the offending value. */
function ruleOf(issue: z.core.$ZodIssue): string {
  // zod 4 messages describe expectations ("Too small: expected string to have >=32 characters")
  // and do not quote the input; custom refinements in this repo are written the same way.
  const msg = issue.message.replace(/\s+/g, " ").trim();
  return msg.length > 0 ? `is invalid: ${msg}` : "is invalid";
}

/**
 * Parse `env` against `spec`. Empty strings count as unset, so `FOO=` falls back to the default.
 * Throws ConfigError for the first invalid variable.
 */
export function loadEnv<S extends EnvSpec>(spec: S, env: NodeJS.ProcessEnv = process.env): EnvValues<S> {
  const out: Record<string, unknown> = {};
  for (const [name, v] of Object.entries(spec)) {
    const raw = env[name];
    const input = raw === undefined || raw === "" ? undefined : raw;
    const res = v.schema.safeParse(input);
    if (!res.success) {
      const issue = res.error.issues[0];
      throw new ConfigError(name, issue ? ruleOf(issue) : "is invalid");
    }
    out[name] = res.data;
  }
  return out as EnvValues<S>;
}

function defaultOf(v: EnvVar): string {
  if (v.defaultText !== undefined) return v.defaultText;
  const def = (v.schema as unknown as { def?: { type?: string; defaultValue?: unknown } }).def;
  if (def?.type === "default") {
    const d = def.defaultValue;
    return v.secret ? "(set)" : JSON.stringify(typeof d === "function" ? (d as () => unknown)() : d);
  }
  return "unset";
}

/** `--help` text for a service: usage line plus every variable with its default and meaning. */
export function formatHelp(title: string, usage: string, spec: EnvSpec, extra = ""): string {
  const rows = Object.entries(spec).map(([name, v]) => {
    const def = defaultOf(v);
    return `  ${name.padEnd(34)} ${v.description}${v.secret ? " (secret)" : ""}\n  ${"".padEnd(34)} default: ${def}`;
  });
  return `${title}\n\nUsage: ${usage}\n\nEnvironment variables:\n${rows.join("\n")}\n${extra ? `\n${extra}\n` : ""}`;
}

/** Variables every service shares (the common contract, "Configuration"). */
export function commonEnv(service: string, defaultPort: number) {
  return {
    HOST: envVar(z.string().min(1).default("127.0.0.1"), "listen address"),
    PORT: envVar(
      z.coerce
        .number({ error: "must be an integer from 0 to 65535" })
        .int("must be an integer from 0 to 65535")
        .min(0, "must be an integer from 0 to 65535")
        .max(65535, "must be an integer from 0 to 65535")
        .default(defaultPort),
      "listen port",
    ),
    DATA_DIR: envVar(
      z.string().min(1).default(`./data/${service}`),
      "where the embedded database, media and state live",
    ),
    DATABASE_URL: envVar(
      z
        .string()
        .regex(/^postgres(ql)?:\/\//, "must start with postgres:// or postgresql://")
        .optional(),
      "PostgreSQL server URL; unset means the embedded SQLite file under DATA_DIR",
      { secret: true },
    ),
    LOG_LEVEL: envVar(
      z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
      "pino log level",
    ),
    LOG_FORMAT: envVar(z.enum(["json", "pretty"]).default("json"), "json lines, or pretty for humans"),
  };
}

/** Comma-separated list → trimmed non-empty entries. */
export const csvList = z
  .string()
  .optional()
  .transform((s) =>
    (s ?? "")
      .split(",")
      .map((x) => x.trim())
      .filter(Boolean),
  );

/** Boolean from the usual spellings; anything else is a config error. */
export const envBool = (def: boolean) =>
  z
    .enum(["true", "false", "1", "0", "yes", "no"], { error: "must be true or false" })
    .optional()
    .transform((v) => (v === undefined ? def : v === "true" || v === "1" || v === "yes"));

/** Integer with bounds, parsed from a string. */
export const envInt = (def: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  z.coerce
    .number({ error: `must be an integer from ${min} to ${max}` })
    .int(`must be an integer from ${min} to ${max}`)
    .min(min, `must be an integer from ${min} to ${max}`)
    .max(max, `must be an integer from ${min} to ${max}`)
    .default(def);
