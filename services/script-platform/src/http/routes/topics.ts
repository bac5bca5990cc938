import { notFound } from "@app/kit/errors";
import { errors, NoBody, typed } from "@app/kit/http/typed-routes";
import { z } from "zod";
import type { RouteModule } from "../../context.js";
import { createTopic, deleteTopic, findTopic, listTopics } from "../../realtime/topics.js";
import { AppParams, appAdmin, targetApp } from "../route-auth.js";
import { page, Topic } from "../schemas.js";
import { pageQuery } from "./triggers.js";

/** Topic administration: GET/POST /admin/apps/{id}/topics, GET/DELETE …/topics/{name}. */
export const topicRoutes: RouteModule = (app, ctx) => {
  const deps = { database: ctx.database, clock: ctx.clock };

  const api = typed(app);
  const TopicParams = AppParams.extend({ name: z.string() });
  // Checked by createTopic (name rules, unknown keys).
  const TopicBody = z.unknown().describe("{name, external?}");

  api.get(
    "/api/v1/admin/apps/:app/topics",
    {
      config: appAdmin,
      schema: {
        params: AppParams,
        querystring: pageQuery,
        response: { 200: page(Topic), ...errors(401, 403, 404, 422) },
      },
    },
    async (req) => listTopics(deps, targetApp(req).id, req.query),
  );

  api.post(
    "/api/v1/admin/apps/:app/topics",
    {
      config: appAdmin,
      schema: {
        params: AppParams,
        body: TopicBody,
        response: { 201: Topic, ...errors(401, 403, 404, 409, 422) },
      },
    },
    async (req, reply) => reply.code(201).send(await createTopic(deps, targetApp(req).id, req.body ?? {})),
  );

  api.get(
    "/api/v1/admin/apps/:app/topics/:name",
    { config: appAdmin, schema: { params: TopicParams, response: { 200: Topic, ...errors(401, 403, 404) } } },
    async (req) => {
      const t = await findTopic(deps, targetApp(req).id, req.params.name);
      if (!t) throw notFound("Topic not found.", "topic_not_found");
      return t;
    },
  );

  api.delete(
    "/api/v1/admin/apps/:app/topics/:name",
    {
      config: appAdmin,
      schema: { params: TopicParams, response: { 204: NoBody, ...errors(401, 403, 404, 409) } },
    },
    async (req, reply) => {
      await deleteTopic(deps, targetApp(req).id, req.params.name);
      return reply.code(204).send();
    },
  );
};
