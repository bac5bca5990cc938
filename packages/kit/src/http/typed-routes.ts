import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifySchemaCompiler,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from "fastify";
import type { FastifySerializerCompiler } from "fastify/types/schema.js";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { AppError } from "../errors.js";
import { isUuid } from "../ids.js";
import { validationError } from "../validate.js";

export type { ZodTypeProvider };

/**
 * Typed routes: every route declares params, querystring, body and each response status as zod
 * schemas (`schema: {...}`), and its auth as `config: { auth: ... }`. Handlers get their types
 * from the schemas through `app.withTypeProvider<ZodTypeProvider>()` (see `typed(app)`).
 * How-to: packages/kit/README.md.
 */

/** A Fastify instance whose route handlers are typed from zod schemas. */
export type ZodApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  ZodTypeProvider
>;

/** `app` with the zod type provider (a type-level view; the compilers are set by createHttpApp). */
export const typed = (app: FastifyInstance): ZodApp => app.withTypeProvider<ZodTypeProvider>();

/** The common error body (the common contract); extra fields sit beside code and message. */
export const ErrorBody = z
  .object({
    error: z.looseObject({
      code: z.string().describe("snake_case error code"),
      message: z.string().describe("Human readable sentence"),
    }),
  })
  .meta({ id: "Error", description: "The common error body" });

/** `{ 401: ErrorBody, 404: ErrorBody, ... }` for a route's `schema.response`. */
export function errors<S extends number>(...statuses: S[]): Record<S, typeof ErrorBody> {
  const out = {} as Record<S, typeof ErrorBody>;
  for (const s of statuses) out[s] = ErrorBody;
  return out;
}

/** A response without a body (204, or a redirect). */
export const NoBody = z.undefined().describe("No body");

/** A response that is not JSON (a file, a stream, a page): documented by content type only. */
export function binary(contentType: string, description: string) {
  return {
    description,
    // any: the handler sends a stream or a buffer, never a serialized body.
    content: { [contentType]: { schema: z.any().meta({ type: "string", format: "binary" }) } },
  };
}

/**
 * A path id that must be a UUID: anything else answers 404 `not_found` with `message` before
 * the database is touched (an id that is not a UUID cannot exist).
 */
export const uuidParam = (message = "Not found.") =>
  z.string().refine((s) => isUuid(s), { params: { notFound: message } });

/**
 * The validator compiler: zod schemas only. A failure becomes the same AppError `parseInput`
 * throws (422 `validation_failed` with `field`, unknown keys named), so the shared error mapper
 * answers exactly as before. A missing body or query validates as `{}` (routes used to parse
 * `req.body ?? {}`).
 */
export const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> = ({ schema, method, url, httpPart }) => {
  if (!(schema instanceof z.ZodType))
    throw new Error(`Route ${method} ${url}: the ${httpPart ?? "request"} schema must be a zod schema.`);
  const emptyAsObject = httpPart === "body" || httpPart === "querystring";
  return (data: unknown) => {
    const res = schema.safeParse(emptyAsObject && data == null ? {} : data);
    return res.success ? { value: res.data } : { error: validationError(res.error) };
  };
};

/** A response body that does not match its declared schema (only raised when checking). */
export class ResponseSchemaError extends Error {
  constructor(
    readonly route: string,
    readonly status: number | string | undefined,
    readonly issues: z.core.$ZodIssue[],
  ) {
    super(
      `Response ${status} of ${route} does not match its schema: ${issues
        .slice(0, 3)
        .map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`)
        .join("; ")}`,
    );
    this.name = "ResponseSchemaError";
  }
}

/**
 * The serializer compiler. Bodies are written with JSON.stringify as they are (nothing is
 * stripped); with `check` (on in tests) each body is first parsed against its declared schema
 * and a mismatch is a 500, so a schema that lies about a response fails the service's tests.
 */
export function zodSerializerCompiler(opts: { check: boolean }): FastifySerializerCompiler<unknown> {
  return ({ schema, method, url, httpStatus }) => {
    const zodSchema = schema instanceof z.ZodType ? schema : null;
    if (!opts.check || !zodSchema) return (data) => JSON.stringify(data);
    return (data) => {
      const res = zodSchema.safeParse(data);
      if (!res.success) throw new ResponseSchemaError(`${method} ${url}`, httpStatus, res.error.issues);
      return JSON.stringify(data);
    };
  };
}

/** Set the zod compilers on an app (createHttpApp does this for every service). */
export function installZodCompilers(app: FastifyInstance, opts: { checkResponses: boolean }): void {
  app.setValidatorCompiler(zodValidatorCompiler);
  app.setSerializerCompiler(zodSerializerCompiler({ check: opts.checkResponses }));
  // Fastify hands the validator `null` for an absent body too, so a JSON `null` is refused here,
  // where the two still differ: it is a body, and not an object.
  app.addHook("preValidation", async (req) => {
    if (req.body === null && req.routeOptions.schema?.body)
      throw new AppError(422, "validation_failed", "The body must be a JSON object.", { field: null });
  });
}

declare const routeAuthTag: unique symbol;

/**
 * A route's `config.auth` as Fastify sees it: opaque. Only a service's `RouteAuth.spec(...)` makes
 * one, so a plain spec (`{ auth: "user" }`) is a type error and each service's routes are checked
 * against its own spec type, with no global augmentation that two services would fight over.
 */
export interface RouteAuthTag {
  readonly [routeAuthTag]: "route-auth";
}

declare module "fastify" {
  interface FastifyContextConfig {
    /**
     * Who may call this route; checked by the service's one auth hook before validation (so an
     * unauthenticated caller gets 401 before any 422). Absent: the route is public.
     */
    auth?: RouteAuthTag;
  }
}

/** A service's route auth, typed by its spec `Spec` and its principal `P` (see `routeAuth`). */
export interface RouteAuth<Spec, P> {
  /** The `config.auth` of a route callable by callers that satisfy `spec`. */
  spec(spec: Spec): RouteAuthTag;
  /** The caller the hook resolved for this request (only on routes that declare `config.auth`). */
  principal(req: FastifyRequest): P;
  /**
   * Install the service's one auth hook: for a route with `config.auth`, `resolve(req, spec)`
   * returns the principal (or throws the 401/403 AppError). Runs at preValidation by default:
   * after body parsing (400 invalid_json, 413 stay first) and before schema validation.
   */
  install(
    app: FastifyInstance,
    /**
     * May answer by itself (e.g. a redirect to a canonical path) and return undefined: the route
     * then does not run.
     */
    resolve: (req: FastifyRequest, spec: Spec, reply: FastifyReply) => P | undefined | Promise<P | undefined>,
    opts?: {
      /** `onRequest` checks before the body is even read (the bridge's secret-guarded API). */
      hook?: "onRequest" | "preValidation";
    },
  ): void;
}

/**
 * Route auth for one service, created once per service:
 *   export const galleryAuth = routeAuth<GalleryAuth, AuthedUser>();
 *   api.get("/me", { config: { auth: galleryAuth.spec("user") }, ... },
 *     async (req) => view(galleryAuth.principal(req)));
 */
export function routeAuth<Spec, P>(): RouteAuth<Spec, P> {
  return {
    spec: (spec) => spec as unknown as RouteAuthTag,
    principal: (req) => {
      const principal = (req as { principal?: P | null }).principal;
      if (principal == null) throw new Error(`${req.routeOptions.url} does not declare config.auth`);
      return principal;
    },
    install: (app, resolve, opts = {}) => {
      if (!app.hasRequestDecorator("principal")) app.decorateRequest("principal", null);
      app.addHook(opts.hook ?? "preValidation", async (req: FastifyRequest, reply: FastifyReply) => {
        const spec = req.routeOptions.config?.auth as Spec | undefined;
        if (spec === undefined) return;
        const principal = await resolve(req, spec, reply);
        if (reply.sent) return reply;
        if (principal === undefined)
          throw new Error(`${req.routeOptions.url}: the auth hook resolved no caller`);
        (req as { principal?: P }).principal = principal;
      });
    },
  };
}
