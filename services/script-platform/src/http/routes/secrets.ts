import { AppError, notFound } from "@app/kit/errors";
import { parseInput } from "@app/kit/validate";
import { z } from "zod";
import type { RouteModule } from "../../context.js";
import { secretsStore } from "../../sdk/secrets.js";
import { adminApp } from "./triggers.js";

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

  app.get<{ Params: { app: string } }>("/api/v1/admin/apps/:app/secrets", async (req) => {
    const { app: a } = await adminApp(ctx, req, req.params.app);
    return { items: await store.list(a.id), next_cursor: null };
  });

  app.post<{ Params: { app: string } }>("/api/v1/admin/apps/:app/secrets", async (req, reply) => {
    const { app: a } = await adminApp(ctx, req, req.params.app);
    const body = parseInput(SetSecret, req.body ?? {});
    if (body.value === undefined)
      throw new AppError(422, "validation_failed", "value: Required.", { field: "value" });
    const now = ctx.clock.iso();
    if (!(await store.set(a.id, body.name, body.value, now))) {
      throw new AppError(413, "payload_too_large", "The secret value is larger than the limit.", {
        field: "value",
        limit: ctx.config.PLATFORM_SECRET_MAX_VALUE_BYTES,
      });
    }
    return reply.code(201).send({ name: body.name, updated_at: now });
  });

  app.delete<{ Params: { app: string; name: string } }>(
    "/api/v1/admin/apps/:app/secrets/:name",
    async (req, reply) => {
      const { app: a } = await adminApp(ctx, req, req.params.app);
      if (!(await store.delete(a.id, req.params.name)))
        throw notFound("Secret not found.", "secret_not_found");
      return reply.code(204).send();
    },
  );
};
