import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { forbidden, unauthorized } from "../src/errors.js";
import { createHttpApp } from "../src/http/app.js";
import { registerOpenApi } from "../src/http/openapi.js";
import { errors, NoBody, routeAuth, typed, uuidParam } from "../src/http/typed-routes.js";
import { captureLogger } from "../src/logger.js";
import { checkOpenApi } from "../src/testing/openapi.js";

const logs = captureLogger();
const testAuth = routeAuth<"user" | "admin", { name: string }>();
const app = createHttpApp({ logger: logs.logger, bodyLimit: 1024, checkResponses: true });

const Thing = z.object({ id: z.string(), name: z.string(), n: z.number().int() }).meta({ id: "Thing" });

beforeAll(async () => {
  await registerOpenApi(app, {
    title: "kit test",
    version: "1.0.0",
    prefix: "/api",
    jsonPath: "/api/openapi.json",
    docsPath: "/api/docs",
    exclude: (url) => url === "/api/secret-protocol",
    securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
  });
  // The test's resolver: "user" needs any bearer, "admin" needs the bearer "admin".
  testAuth.install(app, async (req, spec) => {
    const token = req.headers.authorization?.replace(/^Bearer /, "");
    if (!token) throw unauthorized();
    if (spec === "admin" && token !== "admin") throw forbidden();
    return { name: token };
  });
  const api = typed(app);
  await app.register(
    async (scope) => {
      const s = typed(scope);
      s.post(
        "/things/:id",
        {
          config: { auth: testAuth.spec("user") },
          schema: {
            params: z.object({ id: uuidParam("No such thing.") }),
            querystring: z.object({ n: z.coerce.number().int().default(1) }),
            body: z.strictObject({
              name: z.string().min(1),
              nested: z.strictObject({ k: z.number() }).optional(),
            }),
            response: { 201: Thing, ...errors(401, 404, 422) },
          },
        },
        async (req, reply) => {
          const who = testAuth.principal(req).name;
          return reply
            .code(201)
            .send({ id: req.params.id, name: `${req.body.name} by ${who}`, n: req.query.n });
        },
      );
      s.delete(
        "/things/:id",
        {
          config: { auth: testAuth.spec("admin") },
          schema: { response: { 204: NoBody, ...errors(401, 403) } },
        },
        async (_req, reply) => reply.code(204).send(),
      );
      s.get("/lying", { schema: { response: { 200: Thing } } }, async () => ({ id: "x" }) as never);
      s.get("/untyped", async () => ({ ok: true }));
      s.get("/secret-protocol", async () => "hidden");
    },
    { prefix: "/api" },
  );
  api.get("/outside", { schema: { response: { 200: z.string() } } }, async () => "not documented");
  await app.ready();
});
afterAll(() => app.close());

const ID = "0190e3f2-3b6a-7cc1-8f00-0123456789ab";
const post = (url: string, payload: unknown, auth: string | null = "ann") =>
  app.inject({
    method: "POST",
    url,
    headers: { ...(auth ? { authorization: `Bearer ${auth}` } : {}), "content-type": "application/json" },
    payload: typeof payload === "string" ? payload : JSON.stringify(payload),
  });

describe("typed routes", () => {
  it("types and validates params, query and body, and passes the principal", async () => {
    const res = await post(`/api/things/${ID}?n=3`, { name: "kite" });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({ id: ID, name: "kite by ann", n: 3 });
  });

  it("maps validation failures to today's error codes", async () => {
    const unknown = await post(`/api/things/${ID}`, { name: "a", extra: 1 });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json()).toEqual({
      error: { code: "validation_failed", message: "Unknown field: extra.", field: "extra" },
    });
    const nested = await post(`/api/things/${ID}`, { name: "a", nested: { k: "x" } });
    expect(nested.json().error).toMatchObject({ code: "validation_failed", field: "nested.k" });
    const empty = await app.inject({
      method: "POST",
      url: `/api/things/${ID}`,
      headers: { authorization: "Bearer a" },
    });
    expect(empty.statusCode).toBe(422);
    expect(empty.json().error.field).toBe("name");
    const nullBody = await app.inject({
      method: "POST",
      url: `/api/things/${ID}`,
      headers: { authorization: "Bearer a", "content-type": "application/json" },
      payload: "null",
    });
    expect(nullBody.statusCode).toBe(422);
    expect(nullBody.json().error.message).toBe("The body must be a JSON object.");
    const query = await post(`/api/things/${ID}?n=1.5`, { name: "a" });
    expect(query.json().error).toMatchObject({ code: "validation_failed", field: "n" });
    expect((await post(`/api/things/${ID}`, "{nope")).json().error.code).toBe("invalid_json");
    const big = await post(`/api/things/${ID}`, { name: "x".repeat(5000) });
    expect(big.statusCode).toBe(413);
    expect(big.json().error.code).toBe("payload_too_large");
  });

  it("answers 404 for a path id that cannot exist", async () => {
    const res = await post("/api/things/not-a-uuid", { name: "a" });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: { code: "not_found", message: "No such thing." } });
  });

  it("checks auth in the one hook, before validation", async () => {
    const anon = await post(`/api/things/${ID}`, { extra: 1 }, null);
    expect(anon.statusCode).toBe(401);
    expect(anon.json().error.code).toBe("unauthorized");
    const del = await app.inject({
      method: "DELETE",
      url: `/api/things/${ID}`,
      headers: { authorization: "Bearer ann" },
    });
    expect(del.statusCode).toBe(403);
    const ok = await app.inject({
      method: "DELETE",
      url: `/api/things/${ID}`,
      headers: { authorization: "Bearer admin" },
    });
    expect(ok.statusCode).toBe(204);
  });

  it("turns a response that breaks its schema into a 500 when checking", async () => {
    const res = await app.inject({ method: "GET", url: "/api/lying" });
    expect(res.statusCode).toBe(500);
    expect(res.json().error.code).toBe("internal_error");
    expect(logs.text()).toContain("does not match its schema");
  });

  it("rejects a non-zod request schema at registration", async () => {
    const other = createHttpApp({ logger: logs.logger });
    other.post("/x", { schema: { body: { type: "object" } } }, async () => "x");
    await expect(other.ready()).rejects.toThrow(/must be a zod schema/);
  });
});

describe("OpenAPI", () => {
  it("serves a valid 3.1 document with every API route, and reports the gaps", async () => {
    const { doc, routes, missing, withoutSchema } = await checkOpenApi(app, "/api/openapi.json");
    expect(doc.openapi).toBe("3.1.0");
    expect(missing).toEqual([]);
    expect(withoutSchema).toEqual(["GET /api/untyped"]);
    expect(routes).toBe(4);
    expect(Object.keys(doc.paths ?? {}).sort()).toEqual(["/api/lying", "/api/things/{id}", "/api/untyped"]);
    const op = doc.paths?.["/api/things/{id}"]?.post;
    expect(op?.security).toEqual([{ bearer: [] }]);
    expect(JSON.stringify(op?.responses?.["404"])).toContain("#/components/schemas/Error");
    expect(doc.components?.schemas?.Error).toBeDefined();
    expect(JSON.stringify(doc)).not.toContain("secret-protocol");
  });

  it("renders the reference page from the package (no CDN)", async () => {
    const page = await app.inject({ method: "GET", url: "/api/docs/" });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("swagger-ui");
    expect(page.body).not.toMatch(/https?:\/\/(?!localhost)/);
    const json = await app.inject({ method: "GET", url: "/api/docs/json" });
    expect(json.json().openapi).toBe("3.1.0");
  });
});
