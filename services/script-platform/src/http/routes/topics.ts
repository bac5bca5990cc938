import { notFound } from "@app/kit/errors";
import { parseInput } from "@app/kit/validate";
import type { RouteModule } from "../../context.js";
import { createTopic, deleteTopic, findTopic, listTopics } from "../../realtime/topics.js";
import { adminApp, pageQuery } from "./triggers.js";

/** Topic administration: GET/POST /admin/apps/{id}/topics, GET/DELETE …/topics/{name}. */
export const topicRoutes: RouteModule = (app, ctx) => {
  const deps = { database: ctx.database, clock: ctx.clock };

  app.get<{ Params: { app: string } }>("/api/v1/admin/apps/:app/topics", async (req) => {
    const { app: a } = await adminApp(ctx, req, req.params.app);
    return listTopics(deps, a.id, parseInput(pageQuery, req.query));
  });

  app.post<{ Params: { app: string } }>("/api/v1/admin/apps/:app/topics", async (req, reply) => {
    const { app: a } = await adminApp(ctx, req, req.params.app);
    return reply.code(201).send(await createTopic(deps, a.id, req.body ?? {}));
  });

  app.get<{ Params: { app: string; name: string } }>("/api/v1/admin/apps/:app/topics/:name", async (req) => {
    const { app: a } = await adminApp(ctx, req, req.params.app);
    const t = await findTopic(deps, a.id, req.params.name);
    if (!t) throw notFound("Topic not found.", "topic_not_found");
    return t;
  });

  app.delete<{ Params: { app: string; name: string } }>(
    "/api/v1/admin/apps/:app/topics/:name",
    async (req, reply) => {
      const { app: a } = await adminApp(ctx, req, req.params.app);
      await deleteTopic(deps, a.id, req.params.name);
      return reply.code(204).send();
    },
  );
};
