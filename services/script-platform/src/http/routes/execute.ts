import { AppError } from "@app/kit/errors";
import { errors, typed } from "@app/kit/http/typed-routes";
import { z } from "zod";
import type { RouteModuleWith } from "../../context.js";
import type { Runtime } from "../../execution/runtime.js";
import { acceptRawBodies, serveScript } from "./script-requests.js";

/**
 * `/api/v1/execute/{id}`, any method: runs an endpoint script by id (the always-available route).
 * Open like user routes; a presented admin credential is validated (401 when invalid) and becomes
 * the principal, so the SDK then checks its scopes.
 */
export const executeRoutes: RouteModuleWith<{ invoke: Runtime["invoke"] }> = async (app, ctx, engine) => {
  await app.register(async (scoped) => {
    acceptRawBodies(scoped);
    const schema = {
      description:
        "Runs an endpoint script by id (any method). The answer is the script's own: its status, headers and body.",
      params: z.object({ id: z.string() }),
      response: {
        200: z.unknown().describe("The script's result"),
        ...errors(401, 404, 413, 422, 502, 503, 504, 507),
      },
    };
    typed(scoped).all("/api/v1/execute/:id", { schema }, async (req, reply) => {
      const principal = await ctx.gate.optionalAdmin(req);
      const script = await ctx.scripts.byId(req.params.id);
      if (!script) throw new AppError(404, "script_not_found", "The script does not exist.");
      if (script.kind !== "endpoint")
        throw new AppError(
          422,
          "not_an_endpoint",
          "Only endpoint scripts can be executed; this is a module.",
        );
      return serveScript(engine.invoke, req, reply, {
        appId: script.app_id,
        script,
        mode: "sync",
        params: {},
        rest: "",
        principal,
      });
    });
  });
};
