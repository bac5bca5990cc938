/**
 * English and German: the browser's language picks one, the switch in the top bar changes it
 * (kept in localStorage; the page reloads, so nothing holds a stale string).
 */
const en = {
  brand: "Script platform",
  all_apps: "All apps",
  app: "App",
  keys: "Keys",
  admins: "Admins",
  logout: "Log out",
  switch_language: "Deutsch",
  switch_language_label: "Auf Deutsch umschalten",
  loading: "Loading…",
  no_page: "No such page.",
  back_to_apps: "Back to apps",
  app_sections: "App sections",
  sec_settings: "Settings",
  sec_scripts: "Scripts",
  sec_triggers: "Triggers",
  sec_executions: "Executions",
  sec_dead_letters: "Dead letters",
  sec_secrets: "Secrets",
  sec_topics: "Topics",
  sec_data: "Data",
  sec_members: "Members",
  sign_in: "Sign in",
  signing_in: "Signing in…",
  username: "Username",
  password: "Password",
  new_script: "New script",
  script_title: "Script {name}",
  all_scripts: "All scripts",
  name: "Name",
  kind: "Kind",
  language: "Language",
  language_hint: "TypeScript types are stripped at save.",
  timeout: "Timeout (s)",
  timeout_hint: "Default 30, at most 300.",
  description: "Description",
  source: "Source",
  source_hint: "(Ctrl+S or ⌘S saves; Ctrl+Space completes SDK names and your variables)",
  sdk_reference: "SDK reference",
  version_n: "version {n}",
  sandbox: "Sandbox overrides (JSON)",
  sandbox_hint:
    "max_operations, max_string_size, max_array_size, max_map_size, max_call_levels, max_expr_depth; empty means platform defaults.",
  type_errors_hint: "(checked as you type; saving is still possible)",
  line_n: "Line {n}",
  column_n: ", column {n}",
  not_saved: "Not saved",
  saved: "Saved.",
  save: "Save",
  saving: "Saving…",
  create_script: "Create script",
  delete_script: "Delete script",
  delete_script_confirm: "Delete script {name}?",
  run: "Run",
  method: "Method",
  path: "Path",
  query: "Query",
  headers_json: "Headers (JSON)",
  body: "Body",
  body_hint: "JSON, or plain text",
  fire_triggers: "Fire triggers from this run (kv, docs, files and pubsub writes)",
  running: "Running…",
  run_draft: "Run draft",
  status: "Status",
  status_n: "Status {n}",
  headers: "Headers",
  logs: "Logs",
  no_logs: "No logs.",
  at_line: " at line {line}",
  executions: "Executions",
  refresh: "Refresh",
  live_tail: "Live tail",
  following: "following",
  reconnecting: "reconnecting…",
  connecting: "connecting…",
  all: "all",
  script: "Script",
  started_by: "Started by",
  since: "Since",
  no_executions: "No executions match.",
  execution_id: "execution {id}",
  stack: "Stack",
};

type Dict = typeof en;

const de: Dict = {
  brand: "Skriptplattform",
  all_apps: "Alle Apps",
  app: "App",
  keys: "Schlüssel",
  admins: "Admins",
  logout: "Abmelden",
  switch_language: "English",
  switch_language_label: "Switch to English",
  loading: "Lädt…",
  no_page: "Diese Seite gibt es nicht.",
  back_to_apps: "Zurück zu den Apps",
  app_sections: "Bereiche der App",
  sec_settings: "Einstellungen",
  sec_scripts: "Skripte",
  sec_triggers: "Trigger",
  sec_executions: "Ausführungen",
  sec_dead_letters: "Unzustellbare",
  sec_secrets: "Geheimnisse",
  sec_topics: "Themen",
  sec_data: "Daten",
  sec_members: "Mitglieder",
  sign_in: "Anmelden",
  signing_in: "Anmeldung…",
  username: "Benutzername",
  password: "Passwort",
  new_script: "Neues Skript",
  script_title: "Skript {name}",
  all_scripts: "Alle Skripte",
  name: "Name",
  kind: "Art",
  language: "Sprache",
  language_hint: "TypeScript-Typen werden beim Speichern entfernt.",
  timeout: "Zeitlimit (s)",
  timeout_hint: "Standard 30, höchstens 300.",
  description: "Beschreibung",
  source: "Quelltext",
  source_hint: "(Strg+S oder ⌘S speichert; Strg+Leertaste ergänzt SDK-Namen und Ihre Variablen)",
  sdk_reference: "SDK-Referenz",
  version_n: "Version {n}",
  sandbox: "Sandbox-Grenzen (JSON)",
  sandbox_hint:
    "max_operations, max_string_size, max_array_size, max_map_size, max_call_levels, max_expr_depth; leer heißt Plattform-Standard.",
  type_errors_hint: "(beim Tippen geprüft; Speichern ist trotzdem möglich)",
  line_n: "Zeile {n}",
  column_n: ", Spalte {n}",
  not_saved: "Nicht gespeichert",
  saved: "Gespeichert.",
  save: "Speichern",
  saving: "Speichert…",
  create_script: "Skript anlegen",
  delete_script: "Skript löschen",
  delete_script_confirm: "Skript {name} löschen?",
  run: "Ausführen",
  method: "Methode",
  path: "Pfad",
  query: "Query",
  headers_json: "Header (JSON)",
  body: "Body",
  body_hint: "JSON oder einfacher Text",
  fire_triggers: "Trigger dieses Laufs auslösen (Schreibzugriffe auf kv, docs, files und pubsub)",
  running: "Läuft…",
  run_draft: "Entwurf ausführen",
  status: "Status",
  status_n: "Status {n}",
  headers: "Header",
  logs: "Logs",
  no_logs: "Keine Logs.",
  at_line: " in Zeile {line}",
  executions: "Ausführungen",
  refresh: "Aktualisieren",
  live_tail: "Live mitlesen",
  following: "verbunden",
  reconnecting: "verbindet neu…",
  connecting: "verbindet…",
  all: "alle",
  script: "Skript",
  started_by: "Ausgelöst durch",
  since: "Seit",
  no_executions: "Keine passenden Ausführungen.",
  execution_id: "Ausführung {id}",
  stack: "Stack",
};

export type Lang = "en" | "de";
export type Key = keyof Dict;

function initial(): Lang {
  try {
    const saved = localStorage.getItem("platform_lang");
    if (saved === "en" || saved === "de") return saved;
  } catch {
    // storage blocked: follow the browser
  }
  return (navigator.languages ?? [navigator.language]).some((l) => l.toLowerCase().startsWith("de"))
    ? "de"
    : "en";
}

export const lang: Lang = initial();
document.documentElement.lang = lang;

export function switchLanguage(): void {
  try {
    localStorage.setItem("platform_lang", lang === "de" ? "en" : "de");
  } catch {
    return;
  }
  location.reload();
}

/** The string of `key`, with `{name}` placeholders filled from `vars`. */
export function t(key: Key, vars: Record<string, string | number> = {}): string {
  return (lang === "de" ? de : en)[key].replace(/\{(\w+)\}/g, (m, k: string) =>
    k in vars ? String(vars[k]) : m,
  );
}

type Forms = Partial<Record<Intl.LDMLPluralRule, string>> & { other: string };
const PLURALS: Record<Lang, Record<"type_errors" | "log_lines", Forms>> = {
  en: {
    type_errors: { one: "{n} type error", other: "{n} type errors" },
    log_lines: { one: "{n} log line", other: "{n} log lines" },
  },
  de: {
    type_errors: { one: "{n} Typfehler", other: "{n} Typfehler" },
    log_lines: { one: "{n} Logzeile", other: "{n} Logzeilen" },
  },
};

/** A counted noun by the language's plural rules. */
export function tn(key: keyof (typeof PLURALS)["en"], n: number): string {
  const forms = PLURALS[lang][key];
  return (forms[new Intl.PluralRules(lang).select(n)] ?? forms.other).replace("{n}", String(n));
}
