import fastifySwagger from "@fastify/swagger";
import fastifySwaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance, RouteOptions } from "fastify";
import { jsonSchemaTransform, jsonSchemaTransformObject } from "fastify-type-provider-zod";
import type { OpenAPIV3_1 } from "openapi-types";

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
    transformObject: (doc) => withoutForeignMethods(jsonSchemaTransformObject(doc) as OpenAPIV3_1.Document),
  });
  await app.register(fastifySwaggerUi, {
    routePrefix: opts.docsPath,
    // Relative to the page, so it works behind a path prefix too.
    uiConfig: { url: `${opts.docsPath}/json`, deepLinking: true },
    staticCSP: true,
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
    const op = doc.paths?.[openApiPath(r.url)]?.[r.method.toLowerCase() as OpenAPIV3_1.HttpMethods];
    if (!op) missing.push(`${r.method} ${r.url}`);
    if (!r.hasResponseSchema) withoutSchema.push(`${r.method} ${r.url}`);
  }
  return { missing, withoutSchema };
}

/** All documented routes seen so far (for counts in tests and reports). */
export function documentedRoutes(app: FastifyInstance): readonly RegisteredRoute[] {
  return registered.get(app)?.routes ?? [];
}
