import { errors, NoBody, typed } from "@app/kit/http/typed-routes";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { HostNotifier } from "../../notify/service.js";
import { auth, principal } from "../route-auth.js";

const Endpoint = z.string().min(1).max(2_048);
const Base64url = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9_-]+=*$/, "must be base64url");
const Subscription = z.object({
  endpoint: Endpoint,
  keys: z.object({ p256dh: Base64url, auth: Base64url }),
});

/** Host notifications by Web Push (issue 27, item 6; contract "Live event"). */
export function registerPushRoutes(app: FastifyInstance, notifier: HostNotifier) {
  const api = typed(app);
  api.get("/push/key", { schema: { response: { 200: z.object({ public_key: z.string() }) } } }, async () => ({
    public_key: notifier.publicKey,
  }));
  // Hosts only; a banned host may still switch notifications off.
  api.post(
    "/host/push/subscriptions",
    {
      config: auth.hostWrite,
      schema: { body: Subscription, response: { 201: NoBody, ...errors(400, 401, 403, 422) } },
    },
    async (req, reply) => {
      await notifier.subscribe(principal(req).id, req.body);
      return reply.code(201).send();
    },
  );
  api.delete(
    "/host/push/subscriptions",
    {
      config: auth.host,
      schema: { body: z.object({ endpoint: Endpoint }), response: { 204: NoBody, ...errors(401, 403, 422) } },
    },
    async (req, reply) => {
      await notifier.unsubscribe(principal(req).id, req.body.endpoint);
      return reply.code(204).send();
    },
  );
}
