import { errors, typed } from "@app/kit/http/typed-routes";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GalleryContext } from "../../context.js";
import type { EventTransitions, Transition } from "../../export/transitions.js";
import { auth, principal } from "../route-auth.js";
import { EventInfo, HostEvent } from "../schemas.js";

const TRANSITIONS: readonly Transition[] = ["lock", "unlock", "release", "reopen"];

/** Host event routes: the event view and its transitions. */
export function registerEventRoutes(
  api: FastifyInstance,
  _ctx: GalleryContext,
  transitions: EventTransitions,
): void {
  const r = typed(api);
  r.get(
    "/host/event",
    { config: auth.host, schema: { response: { 200: HostEvent, ...errors(401, 403) } } },
    async () => transitions.hostEventView(),
  );

  for (const transition of TRANSITIONS) {
    r.post(
      `/host/event/${transition}`,
      {
        config: auth.hostWrite,
        schema: { response: { 200: z.object({ event: EventInfo }), ...errors(401, 403, 409) } },
      },
      async (req) => ({ event: await transitions.applyTransition(principal(req), transition) }),
    );
  }
}
