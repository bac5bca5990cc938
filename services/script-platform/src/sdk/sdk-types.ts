/**
 * The one source of truth of what a script can touch, as TypeScript declarations. Served at
 * GET /api/v1/sdk/types.d.ts, rendered as the dashboard's SDK reference and fed to the editor's
 * completion. test/authoring/sdk-types.test.ts fails when the runtime and this text drift apart.
 * Every member carries a JSDoc line: the editor shows it as hover and completion detail.
 */
export const SDK_TYPES = `// Script SDK ${"1.7"} — TypeScript declarations of every global a script can use.
// An endpoint script's default export is the handler: export default async function (ctx: Context) { ... }

/** A JSON value as stored by kv, docs and secrets. */
type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** One page of a list: pass \`cursor\` back to get the next page; null at the end. */
interface Page<T> {
  items: T[];
  cursor: string | null;
}

/** Handler result: an object with a numeric statusCode is a structured response; anything else becomes a 200 with the value as body (a string as text/plain, else JSON). */
interface ScriptResponse {
  statusCode: number;
  headers?: Record<string, string>;
  body?: unknown;
}

/** ctx.request: the HTTP request that started the run (null for triggered runs). */
interface ScriptRequest {
  /** Upper-case HTTP method. */
  method: string;
  /** Request path, without the query. */
  path: string;
  /** Request headers, lower-case names. */
  headers: Record<string, string>;
  /** Parsed JSON body, text, or bytes. */
  body: unknown;
  /** Values of :name segments of a param route (/users/:id → params.id). */
  params: Record<string, string>;
  /** Query string parameters. */
  query: Record<string, string>;
  /** What follows the prefix of a prefix route (/greet/* on /greet/a/b → "a/b"); "" otherwise. */
  rest: string;
}

/** ctx.event.kv: a kv trigger fired by kv.collection(c).set/delete. */
interface KvEvent {
  operation: "set" | "delete";
  collection: string;
  key: string;
  /** The new value (set only). */
  value?: Json;
}

/** ctx.event.docs: a docs trigger fired by docs.collection(c).create/replace/patch/delete. */
interface DocsEvent {
  operation: "create" | "update" | "delete";
  collection: string;
  id: string;
  /** The document body after the change (null on delete). */
  data: Json | null;
  /** The body before the change (null on create). */
  prev_data: Json | null;
}

/** ctx.event.files: metadata only, never the bytes (read them with files.collection(c).get(name)). */
interface FilesEvent {
  operation: "create" | "update" | "delete";
  collection: string;
  name: string;
  content_type: string;
  size: number;
  /** Lowercase hex SHA-256 of the bytes. */
  sha256: string;
  created_at: string;
  updated_at: string;
}

/** ctx.event.pubsub: a message published with pubsub.publishDurable. */
interface PubsubEvent {
  topic: string;
  /** The message; bytes arrive base64-encoded. */
  message: Json;
  published_at: string;
}

/** ctx.event.cron: one tick of a cron trigger. */
interface CronEvent {
  trigger_id: string;
  schedule: string;
  timezone: string;
  scheduled_at: string | null;
  fired_at: string;
}

/** ctx.event.email: an inbound email webhook. */
interface EmailEvent {
  from: string;
  to: string[];
  cc: string[];
  subject: string;
  text: string;
  html: string;
  received_at: string;
  message_id: string | null;
}

/** ctx.event.dead_letter: a triggered run that exhausted its retries. */
interface DeadLetterEvent {
  id: string;
  trigger_id: string | null;
  script_id: string;
  source_kind: string;
  /** The original ctx.event of the failed run. */
  event: unknown;
  error: unknown;
  attempts: number;
  execution_id: string;
  created_at: string;
}

/** ctx.event: exactly one key, named after the trigger kind (ctx.event.kv.key, not ctx.event.key). */
type ScriptEvent =
  | { kv: KvEvent }
  | { docs: DocsEvent }
  | { files: FilesEvent }
  | { pubsub: PubsubEvent }
  | { cron: CronEvent }
  | { email: EmailEvent }
  | { dead_letter: DeadLetterEvent };

/** The handler's only argument. */
interface Context {
  execution_id: string;
  script_id: string;
  script_name: string;
  app_id: string;
  request_id: string | null;
  /** "http", or the trigger kind: kv, docs, files, pubsub, cron, email, dead_letter. */
  invocation_type: string;
  /** SDK version, MAJOR.MINOR. */
  sdk_version: string;
  /** The HTTP request (null for triggered runs). */
  request: ScriptRequest | null;
  /** The trigger event (null for HTTP runs). */
  event: ScriptEvent | null;
}

/** Captured per execution (at most 200 lines of 4 KiB), shown in the executions list. */
interface Log {
  /** Log at trace level. */
  trace(...args: unknown[]): void;
  /** Log at debug level. */
  debug(...args: unknown[]): void;
  /** Log at info level. */
  info(...args: unknown[]): void;
  /** Log at warn level. */
  warn(...args: unknown[]): void;
  /** Log at error level. */
  error(...args: unknown[]): void;
}

/** A kv collection: JSON values by key. set and delete fire kv triggers. */
interface KvCollection {
  /** The value, or null when the key is missing. */
  get(key: string): Promise<Json | null>;
  /** Store a JSON value (fires kv triggers with operation "set"). */
  set(key: string, value: Json): Promise<null>;
  /** Remove a key; resolves whether it existed (fires "delete"). */
  delete(key: string): Promise<boolean>;
  /** Whether the key exists. */
  has(key: string): Promise<boolean>;
  /** Keys in order; limit 1..1000 (default 100). */
  list(opts?: { prefix?: string; cursor?: string | null; limit?: number }): Promise<Page<{ key: string; value: Json }>>;
}

/** kv: key-value storage of this app. */
interface Kv {
  /** A collection handle, e.g. kv.collection("visits"). */
  collection(name: string): KvCollection;
}

/** A stored document. */
interface Doc {
  id: string;
  data: Json;
  created_at: string;
  updated_at: string;
}

/** A docs collection: JSON documents by id. Writes fire docs triggers. */
interface DocsCollection {
  /** Create a document (id generated unless given). */
  create(body: Json, opts?: { id?: string }): Promise<Doc>;
  /** The document, or null. */
  get(id: string): Promise<Doc | null>;
  /** Replace the whole body; null when missing. */
  replace(id: string, body: Json): Promise<Doc | null>;
  /** JSON merge patch (RFC 7386: null removes a key); null when missing. */
  patch(id: string, partial: Json): Promise<Doc | null>;
  /** Remove; resolves whether it existed. */
  delete(id: string): Promise<boolean>;
  /** Documents in id order. */
  list(opts?: { cursor?: string | null; limit?: number }): Promise<Page<Doc>>;
}

/** docs: document storage of this app. */
interface Docs {
  /** A collection handle, e.g. docs.collection("orders"). */
  collection(name: string): DocsCollection;
}

/** Metadata of a stored file. */
interface FileMeta {
  collection: string;
  name: string;
  content_type: string;
  size: number;
  sha256: string;
  created_at: string;
  updated_at: string;
}

/** A files collection: blobs by name. Writes fire files triggers (metadata only). */
interface FilesCollection {
  /** Store a new file; data is bytes or text (text defaults to text/plain). */
  create(file: { name: string; content_type?: string; data: Uint8Array | string }): Promise<FileMeta>;
  /** Metadata, or null. */
  head(name: string): Promise<FileMeta | null>;
  /** Metadata plus the bytes (checksum verified), or null. */
  get(name: string): Promise<(FileMeta & { data: Uint8Array }) | null>;
  /** Replace a file's bytes and/or content type. */
  update(file: { name: string; content_type?: string; data?: Uint8Array | string }): Promise<FileMeta>;
  /** Remove; resolves whether it existed. */
  delete(name: string): Promise<boolean>;
  /** Files in name order. */
  list(opts?: { prefix?: string; cursor?: string | null; limit?: number }): Promise<Page<FileMeta>>;
}

/** files: blob storage of this app. */
interface Files {
  /** A collection handle, e.g. files.collection("uploads"). */
  collection(name: string): FilesCollection;
}

/** pubsub: durable messages to pubsub triggers and realtime subscribers. */
interface Pubsub {
  /** Enqueue one run per matching pubsub trigger, atomically; no match is a silent success. */
  publishDurable(topic: string, message: Json | Uint8Array): Promise<{ enqueued: number }>;
  /** A subscriber token for GET /api/v1/realtime/topics/{topic}?token=… (ttl 60 s..7 days, default 1 h). */
  subscriberToken(topic: string, opts?: { ttl_s?: number }): Promise<string>;
}

/** secrets: encrypted per-app values; writes fire no triggers. */
interface Secrets {
  /** The value, or null. */
  get(name: string): Promise<Json | null>;
  /** Store a JSON value (at most 64 KB). */
  set(name: string, value: Json): Promise<void>;
  /** Remove; resolves whether it existed. */
  delete(name: string): Promise<boolean>;
  /** Names and update times, never values. */
  list(): Promise<{ name: string; updated_at: string }[]>;
}

/** Options of an http call; unknown keys throw. */
interface HttpOptions {
  headers?: Record<string, string>;
  /** Default 10 000, at most 60 000. */
  timeout_ms?: number;
  /** Largest response body read, default 1 MiB, at most 10 MiB. */
  max_bytes?: number;
}

/** An http call's result; a non-2xx status does not throw. */
interface HttpResult {
  status: number;
  headers: Record<string, string>;
  /** JSON parsed when the response is JSON, else text. */
  body: unknown;
  body_raw: Uint8Array;
}

/** http: outbound requests (public addresses only, every redirect hop checked). */
interface Http {
  /** GET a URL. */
  get(url: string, body?: unknown, opts?: HttpOptions): Promise<HttpResult>;
  /** HEAD a URL. */
  head(url: string, body?: unknown, opts?: HttpOptions): Promise<HttpResult>;
  /** POST a body: an object is sent as JSON, a string as text, bytes as octet-stream. */
  post(url: string, body?: unknown, opts?: HttpOptions): Promise<HttpResult>;
  /** PUT a body. */
  put(url: string, body?: unknown, opts?: HttpOptions): Promise<HttpResult>;
  /** PATCH a body. */
  patch(url: string, body?: unknown, opts?: HttpOptions): Promise<HttpResult>;
  /** DELETE a URL. */
  delete(url: string, body?: unknown, opts?: HttpOptions): Promise<HttpResult>;
}

declare const log: Log;
declare const kv: Kv;
declare const docs: Docs;
declare const files: Files;
declare const pubsub: Pubsub;
declare const secrets: Secrets;
declare const http: Http;

// Modules: \`import { name } from "<module script name>"\` imports a module script of the same app.

// Web APIs (a subset of the WHATWG ones, see the README): fetch goes through the http SDK's checks.
declare function fetch(
  input: string | Request,
  init?: { method?: string; headers?: Record<string, string> | Headers; body?: string | Uint8Array | URLSearchParams; timeout_ms?: number; max_bytes?: number },
): Promise<Response>;
/** Runs fn after ms milliseconds, never after the run's deadline. */
declare function setTimeout(fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]): number;
declare function clearTimeout(id: number): void;
declare function setInterval(fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]): number;
declare function clearInterval(id: number): void;
declare function queueMicrotask(fn: () => void): void;
declare function structuredClone<T>(value: T): T;
declare function atob(data: string): string;
declare function btoa(data: string): string;
// Also available: Request, Response, Headers, URL, URLSearchParams, TextEncoder, TextDecoder,
// crypto.randomUUID(), crypto.getRandomValues(typedArray).
`;
