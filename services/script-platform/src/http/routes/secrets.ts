import { AppError, notFound } from "@app/kit/errors";
import { errors, NoBody, typed } from "@app/kit/http/typed-routes";
import { z } from "zod";
import type { RouteModule } from "../../context.js";
import { secretsStore } from "../../sdk/secrets.js";
import { AppParams, appAdmin, targetApp } from "../route-auth.js";
import { page, Secret } from "../schemas.js";

const SecretName = z
  .string()
  .min(1, "must be 1 to 128 characters")
  .max(128, "must be 1 to 128 characters")
  .regex(/^[A-Za-z0-9_.-]+$/, "may hold only letters, digits, '_', '.' and '-'");

const SetSecret = z.strictObject({ name: SecretName, value: z.unknown() });

/**
 * Secret administration: GET (names and updated_at only — values are never listed or returned),
 * POST `{name, value}` (set; any JSON value, sealed exactly as the SDK seals it), DELETE by name.
 */
export const secretRoutes: RouteModule = (app, ctx) => {
  const store = secretsStore(ctx.database, ctx.secretBox, ctx.config.PLATFORM_SECRET_MAX_VALUE_BYTES);

  const api = typed(app);

  api.get(
    "/api/v1/admin/apps/:app/secrets",
    {
      config: appAdmin,
      schema: { params: AppParams, response: { 200: page(Secret), ...errors(401, 403, 404) } },
    },
    async (req) => ({ items: await store.list(targetApp(req).id), next_cursor: null }),
  );

  api.post(
    "/api/v1/admin/apps/:app/secrets",
    {
      config: appAdmin,
      schema: {
        params: AppParams,
        body: SetSecret,
        response: { 201: Secret, ...errors(401, 403, 404, 413, 422) },
      },
    },
    async (req, reply) => {
      const body = req.body;
      if (body.value === undefined)
        throw new AppError(422, "validation_failed", "value: Required.", { field: "value" });
      const now = ctx.clock.iso();
      if (!(await store.set(targetApp(req).id, body.name, body.value, now))) {
        throw new AppError(413, "payload_too_large", "The secret value is larger than the limit.", {
          field: "value",
          limit: ctx.config.PLATFORM_SECRET_MAX_VALUE_BYTES,
        });
      }
      return reply.code(201).send({ name: body.name, updated_at: now });
    },
  );

  api.delete(
    "/api/v1/admin/apps/:app/secrets/:name",
    {
      config: appAdmin,
      schema: {
        params: AppParams.extend({ name: z.string() }),
        response: { 204: NoBody, ...errors(401, 403, 404) },
      },
    },
    async (req, reply) => {
      if (!(await store.delete(targetApp(req).id, req.params.name)))
        throw notFound("Secret not found.", "secret_not_found");
      return reply.code(204).send();
    },
  );
};
