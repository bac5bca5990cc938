// The common baseline: bare Fastify (no logger, no hooks) serving fixed bytes, in its own process.
import Fastify from "fastify";
import type { ServerTarget } from "./types.js";

export interface BareRoute {
  path: string;
  body: string;
  contentType?: string;
}

export async function startBare(args: { routes: BareRoute[] }): Promise<ServerTarget> {
  const app = Fastify({ logger: false });
  for (const r of args.routes) {
    const body = Buffer.from(r.body);
    const type = r.contentType ?? "application/json; charset=utf-8";
    app.get(r.path, async (_req, reply) => reply.type(type).send(body));
  }
  await app.listen({ port: 0, host: "127.0.0.1" });
  const addr = app.server.address();
  const port = typeof addr === "object" && addr ? addr.port : 0;
  return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
}
