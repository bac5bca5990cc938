import fastifySwagger from "@fastify/swagger";
import fastifySwaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance, RouteOptions } from "fastify";
import { jsonSchemaTransform, jsonSchemaTransformObject } from "fastify-type-provider-zod";
import type { OpenAPIV3_1 } from "openapi-types";

/** `METHOD /openapi/path` → [tag, summary]: the reader's index of a service's operations. */
export type OperationTable = Readonly<Record<string, readonly [tag: string, summary: string]>>;

/** A path the router serves through one parameter, documented as its literal form. */
export type PathRenames = Readonly<
  Record<string, { path: string; params: Readonly<Record<string, string>> }>
>;

export interface OpenApiOptions {
  title: string;
  version: string;
  description?: string;
  /** Routes whose URL starts with this (or one of these) are documented (e.g. "/api/v1"); others are hidden. */
  prefix: string | string[];
  /** Where the JSON document is served (e.g. "/api/v1/openapi.json"). */
  jsonPath: string;
  /** Where the rendered reference page is served (e.g. "/api/v1/docs"), from the package, no CDN. */
  docsPath: string;
  /** Routes under the prefix that are not part of the HTTP API (e.g. a protocol endpoint). */
  exclude?: (url: string) => boolean;
  /** Security schemes; routes that declare `config.auth` are marked with all of them. */
  securitySchemes?: Record<string, OpenAPIV3_1.SecuritySchemeObject>;
  /** Tag and summary per operation (applied to the whole document, not route by route). */
  operations?: OperationTable;
  /** Colon actions such as `{id}:run`, which the router reaches through one `{action}` parameter. */
  renames?: PathRenames;
}

export interface RegisteredRoute {
  method: string;
  url: string;
  /** Whether the route declared any response schema. */
  hasResponseSchema: boolean;
}

const OPENAPI_METHODS = new Set(["GET", "PUT", "POST", "DELETE", "OPTIONS", "PATCH", "TRACE"]);

const PATH_ITEM_KEYS = new Set([
  ...[...OPENAPI_METHODS].map((m) => m.toLowerCase()),
  "head",
  "summary",
  "description",
  "servers",
  "parameters",
]);

const SAFE_INT = Number.MAX_SAFE_INTEGER;

/** `z.int()` states ±2^53 as bounds; they are the JSON number range, not a rule of the API. */
function withoutSafeIntBounds(node: unknown): void {
  if (!node || typeof node !== "object") return;
  if (Array.isArray(node)) {
    for (const n of node) withoutSafeIntBounds(n);
    return;
  }
  const o = node as Record<string, unknown>;
  if (o.minimum === -SAFE_INT) delete o.minimum;
  if (o.maximum === SAFE_INT) delete o.maximum;
  for (const v of Object.values(o)) withoutSafeIntBounds(v);
}

/** Apply the path renames, the operation table and the bounds clean-up to the whole document. */
function described(doc: OpenAPIV3_1.Document, opts: OpenApiOptions): OpenAPIV3_1.Document {
  const paths = doc.paths ?? {};
  for (const [from, to] of Object.entries(opts.renames ?? {})) {
    const item = paths[from];
    if (!item) continue;
    delete paths[from];
    for (const op of Object.values(item) as OpenAPIV3_1.OperationObject[])
      for (const p of (op?.parameters ?? []) as OpenAPIV3_1.ParameterObject[])
        if (p.in === "path" && to.params[p.name]) {
          p.name = to.params[p.name] as string;
          // The literal suffix (":run") is part of the path, not of the value.
          p.schema = { type: "string" };
        }
    paths[to.path] = item;
  }
  for (const [path, item] of Object.entries(paths))
    for (const [method, op] of Object.entries(item ?? {})) {
      if (!OPENAPI_METHODS.has(method.toUpperCase()) || !op || typeof op !== "object") continue;
      const entry = opts.operations?.[`${method.toUpperCase()} ${path}`];
      const o = op as OpenAPIV3_1.OperationObject;
      if (entry) {
        o.tags = [entry[0]];
        o.summary = entry[1];
      } else if (!o.summary && o.description) o.summary = o.description.split(/(?<=\.)\s/)[0];
    }
  withoutSafeIntBounds(doc);
  return doc;
}

/** An `all` route makes @fastify/swagger emit every HTTP method; OpenAPI knows only its eight. */
function withoutForeignMethods(doc: OpenAPIV3_1.Document): OpenAPIV3_1.Document {
  for (const item of Object.values(doc.paths ?? {}))
    if (item)
      for (const key of Object.keys(item))
        if (!PATH_ITEM_KEYS.has(key)) delete (item as Record<string, unknown>)[key];
  return doc;
}

const registered = new WeakMap<FastifyInstance, { opts: OpenApiOptions; routes: RegisteredRoute[] }>();

/** Fastify's `/a/:id/b::c` as an OpenAPI path `/a/{id}/b:c`. */
export function openApiPath(url: string): string {
  return url
    .replace(/::/g, "\u0000")
    .replace(/:([A-Za-z0-9_]+)(\([^)]*\))?/g, "{$1}")
    .replace(/\u0000/g, ":");
}

const isDocumented = (opts: OpenApiOptions, url: string) =>
  (Array.isArray(opts.prefix) ? opts.prefix : [opts.prefix]).some(
    (p) => url === p || url.startsWith(`${p}/`),
  ) &&
  !(url === opts.docsPath || url.startsWith(`${opts.docsPath}/`)) &&
  url !== opts.jsonPath &&
  !opts.exclude?.(url);

/**
 * OpenAPI 3.1 from the routes' zod schemas (`@fastify/swagger`), served at `jsonPath`, and the
 * reference page (`@fastify/swagger-ui`, assets from the package) at `docsPath`. Call on the root
 * app BEFORE registering routes: both the document and the route list are built from onRoute.
 */
export async function registerOpenApi(app: FastifyInstance, opts: OpenApiOptions): Promise<void> {
  const state = { opts, routes: [] as RegisteredRoute[] };
  registered.set(app, state);
  app.addHook("onRoute", (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      // HEAD mirrors GET; methods OpenAPI cannot name (an `all` route's PROPFIND…) are not listed.
      if (!OPENAPI_METHODS.has(method) || !isDocumented(opts, route.url)) continue;
      state.routes.push({
        method,
        url: route.url,
        hasResponseSchema: Boolean((route.schema as { response?: unknown } | undefined)?.response),
      });
    }
  });

  const schemes = opts.securitySchemes ?? {};
  const security = Object.keys(schemes).map((name) => ({ [name]: [] as string[] }));
  await app.register(fastifySwagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: opts.title,
        version: opts.version,
        ...(opts.description ? { description: opts.description } : {}),
      },
      components: { securitySchemes: schemes },
    },
    transform: (doc) => {
      if (!isDocumented(opts, doc.url)) return { schema: { hide: true }, url: doc.url };
      const out = jsonSchemaTransform(doc);
      const auth = (doc.route.config as { auth?: unknown } | undefined)?.auth;
      if (auth !== undefined && security.length > 0)
        (out.schema as Record<string, unknown>).security = security;
      return out;
    },
    transformObject: (doc) =>
      described(withoutForeignMethods(jsonSchemaTransformObject(doc) as OpenAPIV3_1.Document), opts),
  });
  await app.register(fastifySwaggerUi, {
    routePrefix: opts.docsPath,
    // Relative to the page, so it works behind a path prefix too.
    uiConfig: { url: `${opts.docsPath}/json`, deepLinking: true },
    staticCSP: true,
    // Swagger UI sets inline styles from its script (a console error on every page load under
    // the default `style-src 'self' https:`); styles only, scripts stay 'self'.
    transformStaticCSP: (header: string) =>
      header.replace(/style-src [^;]*/, "style-src 'self' 'unsafe-inline'"),
  });
  app.get(opts.jsonPath, { schema: { hide: true } }, async () => app.swagger());
}

/**
 * Routes under the prefix that the document misses, and routes declared without a response
 * schema. Tests assert both are empty, so a route added later without schemas fails them.
 */
export function openApiGaps(app: FastifyInstance): { missing: string[]; withoutSchema: string[] } {
  const state = registered.get(app);
  if (!state) throw new Error("registerOpenApi was not called on this app");
  const doc = app.swagger() as OpenAPIV3_1.Document;
  const missing: string[] = [];
  const withoutSchema: string[] = [];
  for (const r of state.routes) {
    const path = openApiPath(r.url);
    const op =
      doc.paths?.[state.opts.renames?.[path]?.path ?? path]?.[
        r.method.toLowerCase() as OpenAPIV3_1.HttpMethods
      ];
    if (!op) missing.push(`${r.method} ${r.url}`);
    if (!r.hasResponseSchema) withoutSchema.push(`${r.method} ${r.url}`);
  }
  return { missing, withoutSchema };
}

/** Operations of the document without a summary or a tag (`METHOD /path`); tests assert none. */
export function undescribedOperations(doc: OpenAPIV3_1.Document): string[] {
  const out: string[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {}))
    for (const [method, op] of Object.entries(item ?? {})) {
      if (!OPENAPI_METHODS.has(method.toUpperCase()) || !op || typeof op !== "object") continue;
      const o = op as OpenAPIV3_1.OperationObject;
      if (!o.summary || !o.tags?.length) out.push(`${method.toUpperCase()} ${path}`);
    }
  return out;
}

/** All documented routes seen so far (for counts in tests and reports). */
export function documentedRoutes(app: FastifyInstance): readonly RegisteredRoute[] {
  return registered.get(app)?.routes ?? [];
}
