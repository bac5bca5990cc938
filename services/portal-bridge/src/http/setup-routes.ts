import { AppError } from "@app/kit/errors";
import { presentedCredentials } from "@app/kit/http";
import { binary, errors, typed } from "@app/kit/http/typed-routes";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { Alerts } from "../alerts/alerts.js";
import { type Lang, runSetupChecks, type SetupDeps } from "../setup/checks.js";
import type { Guard } from "./guard.js";
import { addFormParser, sendPage } from "./html-page.js";
import { bridgeAuth } from "./route-auth.js";
import { SetupReport, TestAlertResult } from "./schemas.js";
import { setupPage } from "./setup-page.js";
import { loginPage } from "./token-page.js";

export interface SetupRouteDeps extends SetupDeps {
  guard: Guard;
  alerts: Alerts | null;
}

const LangQuery = z.object({ lang: z.enum(["en", "de"]).optional() });

/** `?lang=` first, else the browser's first language. */
function langOf(req: FastifyRequest): Lang {
  const q = (req.query as { lang?: unknown } | undefined)?.lang;
  if (q === "de" || q === "en") return q;
  return /^\s*de\b/i.test(String(req.headers["accept-language"] ?? "")) ? "de" : "en";
}

/** /setup (page, behind MCP_AUTH_TOKEN as /token is), GET /api/setup, POST /api/setup/test-alert. */
export function registerSetupRoutes(app: FastifyInstance, deps: SetupRouteDeps): void {
  const { guard } = deps;
  const api = typed(app);
  const denied = errors(401, 403);

  api.get(
    "/api/setup",
    {
      config: { auth: bridgeAuth.spec("api") },
      schema: { querystring: LangQuery, response: { 200: SetupReport, ...denied } },
    },
    async (req) => {
      const lang = langOf(req);
      const checks = await runSetupChecks(deps);
      return { checks: checks.map((c) => ({ id: c.id, state: c.state, message: c.message[lang] })) };
    },
  );

  api.post(
    "/api/setup/test-alert",
    {
      config: { auth: bridgeAuth.spec("api") },
      schema: { response: { 200: TestAlertResult, ...denied, ...errors(409) } },
    },
    async () => {
      if (!deps.alerts)
        throw new AppError(409, "alerts_not_configured", "No alert webhook is set (ALERT_WEBHOOK_URL).");
      return deps.alerts.send(
        "test",
        "portal-bridge: test alert from the set-up page. If you read this, alerts and the digest reach you.",
      );
    },
  );

  const render = async (req: FastifyRequest, reply: FastifyReply, secret: string | null) => {
    const checks = await runSetupChecks(deps);
    return sendPage(reply, 200, (n) => setupPage(n, langOf(req), checks, secret, deps.alerts !== null));
  };
  const page = {
    schema: {
      description: "The set-up check (HTML, English or German); 401 shows the login form.",
      querystring: LangQuery,
      response: {
        200: binary("text/html", "The set-up page"),
        401: binary("text/html", "The login form"),
        403: errors(403)[403],
      },
    },
  };
  app.get("/setup", page, async (req, reply) => {
    if (guard.apiOpen) return render(req, reply, null);
    const secret = presentedCredentials(req.headers).find((c) => guard.matchesAuthToken(c));
    if (secret === undefined) return sendPage(reply, 401, (n) => loginPage(n, false, "/setup", langOf(req)));
    return render(req, reply, secret);
  });
  app.register(async (scope) => {
    addFormParser(scope);
    scope.post("/setup", page, async (req, reply) => {
      if (guard.apiOpen) return render(req, reply, null);
      const secret = (req.body as Record<string, unknown> | null)?.secret;
      if (typeof secret !== "string" || !guard.matchesAuthToken(secret))
        return sendPage(reply, 401, (n) => loginPage(n, true, `/setup?lang=${langOf(req)}`, langOf(req)));
      return render(req, reply, secret);
    });
  });
}
