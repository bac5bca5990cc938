import { errors, typed } from "@app/kit/http/typed-routes";
import { z } from "zod";
import type { RouteModuleWith } from "../../context.js";
import {
  ignoreDeadLetter,
  listDeadLetters,
  presentDeadLetter,
  replayDeadLetter,
  settleHandledDeadLetters,
} from "../../dispatch/dead-letters.js";
import type { OutboxWriter } from "../../dispatch/enqueue.js";
import { AppParams, appAdmin, targetApp } from "../route-auth.js";
import { DeadLetter, page } from "../schemas.js";

// presentDeadLetter builds a plain record; the response schema (checked in tests) names its shape.
const present = (dl: Parameters<typeof presentDeadLetter>[0]) => presentDeadLetter(dl) as DeadLetter;

import { pageQuery } from "./triggers.js";

const listQuery = pageQuery.extend({ status: z.enum(["unresolved", "resolved"]).optional() });

/** GET /admin/apps/{id}/dead-letters?status=, POST …/{dl_id}/replay and …/{dl_id}/ignore. */
export const deadLetterRoutes: RouteModuleWith<{ outbox: OutboxWriter }> = (app, ctx, deps) => {
  const { database, clock } = ctx;

  const api = typed(app);
  const DlParams = AppParams.extend({ id: z.string() });

  api.get(
    "/api/v1/admin/apps/:app/dead-letters",
    {
      config: appAdmin,
      schema: {
        params: AppParams,
        querystring: listQuery,
        response: { 200: page(DeadLetter), ...errors(401, 403, 404, 422) },
      },
    },
    async (req) => {
      const q = req.query;
      // Settle finished handler runs first so the listing shows their outcome.
      await settleHandledDeadLetters(database, clock.iso());
      const rows = await listDeadLetters(database.db, database.dialect, targetApp(req).id, {
        status: q.status,
        before: q.cursor,
        limit: q.limit + 1,
      });
      const items = rows.slice(0, q.limit);
      return {
        items: items.map(present),
        next_cursor: rows.length > q.limit ? (items.at(-1)?.id ?? null) : null,
      };
    },
  );

  const resolve = (action: "replay" | "ignore", run: typeof ignoreDeadLetter) =>
    api.post(
      `/api/v1/admin/apps/:app/dead-letters/:id/${action}`,
      {
        config: appAdmin,
        schema: { params: DlParams, response: { 200: DeadLetter, ...errors(401, 403, 404, 409) } },
      },
      async (req) => present(await run(database, targetApp(req).id, req.params.id, clock.iso())),
    );
  resolve("replay", (db, appId, id, now) => replayDeadLetter(db, deps.outbox, appId, id, now));
  resolve("ignore", ignoreDeadLetter);
};
