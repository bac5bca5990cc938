import SwaggerParser from "@apidevtools/swagger-parser";
import type { FastifyInstance } from "fastify";
import type { OpenAPIV3_1 } from "openapi-types";
import { documentedRoutes, openApiGaps, undescribedOperations } from "../http/openapi.js";

/**
 * Fetch a service's OpenAPI document over HTTP, validate it (OpenAPI 3.1 schema and $refs,
 * @apidevtools/swagger-parser), and list the gaps: registered API routes missing from the
 * document and routes without a response schema. Every service's openapi test asserts both empty.
 */
export async function checkOpenApi(
  app: FastifyInstance,
  jsonPath: string,
): Promise<{
  doc: OpenAPIV3_1.Document;
  routes: number;
  missing: string[];
  withoutSchema: string[];
  /** Operations without a summary or a tag. */
  undescribed: string[];
}> {
  const res = await app.inject({ method: "GET", url: jsonPath });
  if (res.statusCode !== 200) throw new Error(`GET ${jsonPath} answered ${res.statusCode}`);
  const doc = res.json() as OpenAPIV3_1.Document;
  // validate() dereferences in place; give it a copy so `doc` keeps its $refs.
  await SwaggerParser.validate(structuredClone(doc) as never);
  return {
    doc,
    routes: documentedRoutes(app).length,
    ...openApiGaps(app),
    undescribed: undescribedOperations(doc),
  };
}

/**
 * A web app's calls (`METHOD /path`, `{}` for each templated segment, after `prefix`) that the
 * document's paths do not list. A `{}` on either side matches one whole segment; `{}:run` matches
 * only `{}:run`, so colon actions must be documented as their own paths.
 */
export function undocumentedCalls(
  paths: Record<string, Record<string, unknown>>,
  calls: string[],
  prefix = "",
): string[] {
  const documented = Object.entries(paths).flatMap(([path, item]) =>
    Object.keys(item).map((m) => ({
      method: m.toUpperCase(),
      segments: path
        .slice(path.startsWith(prefix) ? prefix.length : 0)
        .replace(/\{[^}]*\}/g, "{}")
        .split("/"),
    })),
  );
  return calls.filter((call) => {
    const [method, path] = call.split(" ") as [string, string];
    const segs = path.split("/");
    return !documented.some(
      (d) =>
        d.method === method &&
        d.segments.length === segs.length &&
        d.segments.every((s, i) => s === segs[i] || s === "{}" || segs[i] === "{}"),
    );
  });
}
