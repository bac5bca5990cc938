import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { AppError, tooManyRequests } from "../src/errors.js";
import { createHttpApp, registerHealth } from "../src/http/app.js";
import { captureLogger, duplicateKeys } from "../src/logger.js";
import { parseInput } from "../src/validate.js";

const logs = captureLogger();
const app = createHttpApp({ logger: logs.logger, bodyLimit: 1024 });
registerHealth(app);
const Body = z.strictObject({
  name: z.string().min(1),
  nested: z.strictObject({ n: z.number().int() }).optional(),
});
app.post("/echo", async (req) => parseInput(Body, req.body));
app.get("/boom", async () => {
  throw new Error("connect ECONNREFUSED /var/lib/secret.sock password=hunter2");
});
app.get("/limited", async () => {
  throw tooManyRequests(7.2);
});
app.get("/teapot", async () => {
  throw new AppError(409, "name_taken", "That name is taken.", { field: "name" });
});
afterAll(() => app.close());

describe("createHttpApp error mapper", () => {
  it("maps malformed JSON to 400 invalid_json", async () => {
    const res = await app.inject({
      method: "POST",
      url: "/echo",
      headers: { "content-type": "application/json" },
      payload: "{nope",
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: { code: "invalid_json", message: expect.any(String) } });
  });

  it("maps an over-limit body to 413 payload_too_large", async () => {
    const res = await app.inject({
      method: "POST",
      url: "/echo",
      headers: { "content-type": "application/json" },
      payload: JSON.stringify({ name: "x".repeat(5000) }),
    });
    expect(res.statusCode).toBe(413);
    expect(res.json().error.code).toBe("payload_too_large");
  });

  it("rejects unknown fields and invalid values with 422 validation_failed naming the field", async () => {
    const unknown = await app.inject({ method: "POST", url: "/echo", payload: { name: "a", extra: 1 } });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json().error).toMatchObject({ code: "validation_failed", field: "extra" });
    const nested = await app.inject({
      method: "POST",
      url: "/echo",
      payload: { name: "a", nested: { n: 1.5 } },
    });
    expect(nested.statusCode).toBe(422);
    expect(nested.json().error).toMatchObject({ code: "validation_failed", field: "nested.n" });
    const ok = await app.inject({ method: "POST", url: "/echo", payload: { name: "a" } });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toEqual({ name: "a" });
  });

  it("hides internals of unexpected errors behind 500 internal_error", async () => {
    const res = await app.inject({ url: "/boom" });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ error: { code: "internal_error", message: "Internal server error." } });
    expect(res.body).not.toMatch(/secret|hunter2|ECONNREFUSED|at /);
  });

  it("keeps AppError codes and extras, and 429 carries Retry-After", async () => {
    const taken = await app.inject({ url: "/teapot" });
    expect(taken.statusCode).toBe(409);
    expect(taken.json()).toEqual({
      error: { code: "name_taken", message: "That name is taken.", field: "name" },
    });
    const limited = await app.inject({ url: "/limited" });
    expect(limited.statusCode).toBe(429);
    expect(limited.headers["retry-after"]).toBe("8");
    expect(limited.json().error).toMatchObject({ code: "rate_limited", retry_after_s: 8 });
  });

  it("answers unknown routes and unknown methods with the 404 body, never 405", async () => {
    for (const [method, url] of [
      ["GET", "/nowhere"],
      ["DELETE", "/healthz"],
    ] as const) {
      const res = await app.inject({ method, url });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: { code: "not_found", message: "Not found." } });
    }
  });

  it("serves /healthz as plain ok and sets a request id", async () => {
    const res = await app.inject({ url: "/healthz" });
    expect(res.body).toBe("ok");
    expect(res.headers["content-type"]).toMatch(/^text\/plain/);
    expect(res.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("never logs query strings or credential headers", async () => {
    await app.inject({
      url: "/healthz?ticket=tkt-very-secret",
      headers: { authorization: "Bearer bearer-very-secret", cookie: "sid=cookie-very-secret" },
    });
    const text = logs.text();
    expect(text).toContain("/healthz");
    expect(text).not.toContain("tkt-very-secret");
    expect(text).not.toContain("bearer-very-secret");
    expect(text).not.toContain("cookie-very-secret");
  });
});

describe("malformed URLs", () => {
  it("get 400 invalid_url in the common shape without echoing the path, or 404 where the app says so", async () => {
    const hidden = createHttpApp({
      logger: captureLogger().logger,
      badUrlIsNotFound: (u) => u.startsWith("/media"),
    });
    hidden.get("/x/:p", async () => "x");
    const bad = await hidden.inject({ url: "/x/%E0%A4%A" });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({ error: { code: "invalid_url", message: "The request URL is not valid." } });
    const media = await hidden.inject({ url: "/media/%E0%A4%A" });
    expect(media.statusCode).toBe(404);
    expect(media.json()).toEqual({ error: { code: "not_found", message: "Not found." } });
    await hidden.close();
  });
});

describe("createHttpApp request logging", () => {
  it("omits the request path from every log line", async () => {
    const cap = captureLogger();
    const quiet = createHttpApp({ logger: cap.logger });
    registerHealth(quiet);
    await quiet.inject({ url: "/path-secret-0123456789abcdef/mcp" });
    await quiet.close();
    expect(cap.lines.length).toBeGreaterThan(0);
    expect(cap.text()).not.toContain("path-secret-0123456789abcdef");
  });
});

describe("one log line per request", () => {
  it("logs method, route pattern, status and duration at info; probes at debug; no raw path", async () => {
    const cap = captureLogger();
    const app = createHttpApp({ logger: cap.logger });
    registerHealth(app);
    app.get("/items/:id", async () => ({ ok: true }));
    app.get("/stream", (_req, reply) => {
      reply.hijack();
      reply.raw.writeHead(200, { "content-type": "text/plain" });
      reply.raw.end("data");
    });
    await app.inject({ url: "/items/secret-id-42?token=abc" });
    await app.inject({ url: "/healthz" });
    await app.inject({ url: "/nowhere/secret-path" });
    await app.inject({ url: "/stream" });
    await app.close();
    const lines = cap.lines.map((l) => JSON.parse(l));
    const requests = lines.filter((l) => l.msg === "request");
    expect(requests.map(({ level, method, route, status }) => ({ level, method, route, status }))).toEqual([
      { level: 30, method: "GET", route: "/items/:id", status: 200 },
      { level: 20, method: "GET", route: "/healthz", status: 200 },
      { level: 30, method: "GET", route: "(unmatched)", status: 404 },
      { level: 30, method: "GET", route: "/stream", status: 200 },
    ]);
    for (const r of requests) expect(typeof r.duration_ms).toBe("number");
    // Fastify's own "incoming request" / "request completed" pair is off.
    expect(lines.filter((l) => l.msg !== "request")).toEqual([]);
    expect(cap.text()).not.toMatch(/secret-id-42|secret-path|token=abc/);
  });

  it("carries the request id on the request line and on lines a handler writes through req.log", async () => {
    const cap = captureLogger();
    const app = createHttpApp({ logger: cap.logger });
    app.get("/warns", async (req) => {
      req.log.warn({ detail: 1 }, "handler line");
      return { ok: true };
    });
    app.get("/quiet", async () => ({ ok: true }));
    await app.inject({ url: "/warns", headers: { "x-request-id": "req-id-warns-1" } });
    await app.inject({ url: "/quiet", headers: { "x-request-id": "req-id-quiet-1" } });
    await app.close();
    const lines = cap.lines.map((l) => JSON.parse(l));
    expect(lines.map(({ reqId, msg }) => ({ reqId, msg }))).toEqual([
      { reqId: "req-id-warns-1", msg: "handler line" },
      { reqId: "req-id-warns-1", msg: "request" },
      { reqId: "req-id-quiet-1", msg: "request" },
    ]);
    // The request line reads as a child logger's would: the id right after the app's bindings.
    const quiet = cap.lines[2] ?? "";
    expect(quiet.indexOf('"reqId"')).toBeLessThan(quiet.indexOf('"method"'));
    expect(duplicateKeys(quiet)).toEqual([]);
  });

  it("finds repeated keys in a JSON line", () => {
    expect(duplicateKeys('{"name":"a","x":{"name":1,"y":[{"a":1,"a":2}]},"name":"b"}')).toEqual([
      "a",
      "name",
    ]);
    expect(duplicateKeys('{"a":"{\\"a\\":1}","b":["a","a"]}')).toEqual([]);
  });
});
