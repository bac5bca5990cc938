import type { Clock } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { AppError } from "@app/kit/errors";
import { z } from "zod";
import type { Settings, SettingsStore } from "../context.js";
import type { GalleryDB } from "../db/schema.js";
import { listConfig, upsertConfig } from "./repository.js";

const int = (min: number, max: number) => z.number().int().min(min).max(max);

/** The admin-editable allowlist: key → validator and default (contract "Config allowlist"). */
export const SETTINGS_SCHEMA: { [K in keyof Settings]: z.ZodType<Settings[K]> } = {
  event_name: z.string().trim().min(1).max(100),
  quota_tolerance: z.number().gt(0).max(1),
  upload_rate_per_hour: int(1, 100_000),
  join_ip_rate_per_min: int(1, 100_000),
  recover_ip_rate_per_min: int(1, 100_000),
  feed_rate_per_min: int(1, 100_000),
  delta_rate_per_min: int(1, 100_000),
  export_downloads_per_day: int(1, 10_000),
  // The upload route itself accepts at most 576 MiB.
  max_upload_bytes: int(1, 603_979_776),
  premoderation: z.boolean(),
  welcome_text_en: z.string().trim().max(1000),
  welcome_text_de: z.string().trim().max(1000),
  accent_color: z
    .string()
    .regex(/^#[0-9a-fA-F]{6}$/)
    .transform((s) => s.toLowerCase()),
  public_url: z
    .string()
    .trim()
    .max(500)
    .refine((s) => /^https?:\/\/[^\s/]+/.test(s) && URL.canParse(s), "must be an http(s) URL")
    .transform((s) => s.replace(/\/+$/, ""))
    .nullable(),
  guestbook_enabled: z.boolean(),
  guestbook_voice: z.boolean(),
  upload_only: z.boolean(),
};

export const SETTINGS_DEFAULTS: Settings = {
  event_name: "Our Event",
  quota_tolerance: 0.8,
  upload_rate_per_hour: 100,
  join_ip_rate_per_min: 300,
  recover_ip_rate_per_min: 30,
  feed_rate_per_min: 240,
  delta_rate_per_min: 120,
  export_downloads_per_day: 3,
  max_upload_bytes: 603_979_776,
  premoderation: false,
  welcome_text_en: "",
  welcome_text_de: "",
  accent_color: "#ff7a59",
  public_url: null,
  guestbook_enabled: true,
  guestbook_voice: false,
  upload_only: false,
};

const isKey = (k: string): k is keyof Settings => Object.hasOwn(SETTINGS_DEFAULTS, k);

export interface EditableSettingsStore extends SettingsStore {
  /** Validate every key first, then write them all in one transaction. */
  update(patch: Record<string, unknown>): Promise<Settings>;
}

/** Channel on which a settings change reaches every process (kit notifier: LISTEN/NOTIFY on PG). */
export const SETTINGS_CHANNEL = "gallery_settings";
/**
 * Safety net on PostgreSQL: should a notification be lost (listener reconnecting), a process still
 * re-reads within this time. On SQLite one process owns the database and sees every change.
 */
export const SETTINGS_RECHECK_MS = 30_000;

/**
 * Settings over the `config` table, one JSON value per key, read once per change: the decoded
 * values are cached and dropped when any process changes them. A stored value that no longer
 * validates falls back to the default rather than breaking the service.
 */
export interface CachedSettingsStore extends EditableSettingsStore {
  /** Stop listening for changes from other processes. */
  close(): Promise<void>;
}

export async function createSettingsStore(deps: {
  database: Database<GalleryDB>;
  clock: Clock;
}): Promise<CachedSettingsStore> {
  const { database, clock } = deps;
  const { dialect } = database;
  let cached: { at: number; value: Promise<Settings> } | null = null;
  const recheckMs = dialect.sharedByProcesses ? SETTINGS_RECHECK_MS : Number.POSITIVE_INFINITY;
  const unlisten = await database.notifier.subscribe(SETTINGS_CHANNEL, () => {
    cached = null;
  });
  const decode = <K extends keyof Settings>(key: K, raw: unknown): Settings[K] => {
    let value: unknown;
    try {
      value = dialect.fromJson(raw);
    } catch {
      return SETTINGS_DEFAULTS[key];
    }
    const parsed = SETTINGS_SCHEMA[key].safeParse(value);
    return parsed.success ? parsed.data : SETTINGS_DEFAULTS[key];
  };
  const load = async (): Promise<Settings> => {
    const rows = await listConfig(database.reader);
    const out: Settings = { ...SETTINGS_DEFAULTS };
    for (const r of rows)
      if (isKey(r.key)) (out as unknown as Record<string, unknown>)[r.key] = decode(r.key, r.value);
    return out;
  };
  const all = (): Promise<Settings> => {
    const now = clock.now();
    if (!cached || now - cached.at >= recheckMs) {
      const value = load();
      cached = { at: now, value };
      // A failed read is not remembered.
      value.catch(() => {
        if (cached?.value === value) cached = null;
      });
    }
    return cached.value;
  };
  return {
    async get(key) {
      return (await all())[key];
    },
    all,
    async update(patch) {
      const values: [keyof Settings, unknown][] = [];
      for (const [key, value] of Object.entries(patch)) {
        if (!isKey(key))
          throw new AppError(422, "unknown_key", `Unknown config key: ${key}.`, { field: key });
        const parsed = SETTINGS_SCHEMA[key].safeParse(value);
        if (!parsed.success)
          throw new AppError(422, "invalid_value", `Invalid value for ${key}.`, { field: key });
        values.push([key, parsed.data]);
      }
      const now = clock.iso();
      await database.writeTx(async (trx) => {
        for (const [key, value] of values) await upsertConfig(trx, key, dialect.json(value), now);
      });
      cached = null;
      await database.notifier.publish(SETTINGS_CHANNEL, "changed").catch(() => {});
      return all();
    },
    close: () => unlisten(),
  };
}
