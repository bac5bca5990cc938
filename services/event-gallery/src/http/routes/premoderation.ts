import { errors, NoBody, typed } from "@app/kit/http/typed-routes";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GalleryContext } from "../../context.js";
import { BULK_APPROVE_MAX, type PremoderationService } from "../../premoderation/service.js";
import { auth, principal } from "../route-auth.js";
import { MyUploads, UploadBody } from "../schemas.js";
import { IdParams } from "./social.js";

const q = z.string().max(4_000).optional();
const PendingQuery = z.object({ limit: q, cursor: q });
const BulkApprove = z.union([
  z.strictObject({ ids: z.array(z.uuid()).min(1).max(BULK_APPROVE_MAX) }),
  z.strictObject({ all: z.literal(true) }),
]);

/** Pre-moderation queue for hosts (contract "Hosts and guests"). */
export function registerPremoderationRoutes(
  app: FastifyInstance,
  _ctx: GalleryContext,
  premod: PremoderationService,
) {
  const api = typed(app);
  api.get(
    "/host/pending",
    {
      config: auth.host,
      schema: { querystring: PendingQuery, response: { 200: MyUploads, ...errors(401, 403, 422) } },
    },
    async (req) => premod.listPending(principal(req), req.query),
  );
  api.post(
    "/host/upload/:id/approve",
    {
      config: auth.hostWrite,
      schema: { params: IdParams(), response: { 200: UploadBody, ...errors(401, 403, 404, 409) } },
    },
    async (req) => ({ upload: await premod.approve(principal(req), req.params.id) }),
  );
  // The path is "/host/pending:approve" (a colon is doubled for the router: not a parameter).
  api.post(
    "/host/pending::approve",
    {
      config: auth.hostWrite,
      schema: {
        description: `Approve the listed pending uploads (at most ${BULK_APPROVE_MAX} ids) or, with {all: true}, every pending upload the queue lists. Unknown, removed and already approved ids are skipped.`,
        body: BulkApprove,
        response: { 200: z.object({ approved: z.number().int() }), ...errors(401, 403, 422) },
      },
    },
    async (req) => ({ approved: await premod.approveMany(principal(req), req.body) }),
  );
  api.post(
    "/host/upload/:id/reject",
    {
      config: auth.hostWrite,
      schema: { params: IdParams(), response: { 204: NoBody, ...errors(401, 403, 404, 409) } },
    },
    async (req, reply) => {
      await premod.reject(principal(req), req.params.id);
      return reply.code(204).send();
    },
  );
}
