import { parseInput } from "@app/kit/validate";
import { z } from "zod";
import type { RouteModule } from "../../context.js";
import {
  ignoreDeadLetter,
  listDeadLetters,
  presentDeadLetter,
  replayDeadLetter,
  settleHandledDeadLetters,
} from "../../dispatch/dead-letters.js";
import { adminApp, pageQuery } from "./triggers.js";

const listQuery = pageQuery.extend({ status: z.enum(["unresolved", "resolved"]).optional() });

/** GET /admin/apps/{id}/dead-letters?status=, POST …/{dl_id}/replay and …/{dl_id}/ignore. */
export const deadLetterRoutes: RouteModule = (app, ctx) => {
  const { database, clock } = ctx;

  app.get<{ Params: { app: string } }>("/api/v1/admin/apps/:app/dead-letters", async (req) => {
    const { app: a } = await adminApp(ctx, req, req.params.app);
    const q = parseInput(listQuery, req.query);
    // Settle finished handler runs first so the listing shows their outcome.
    await settleHandledDeadLetters(database, clock.iso());
    const rows = await listDeadLetters(database.db, database.dialect, a.id, {
      status: q.status,
      before: q.cursor,
      limit: q.limit + 1,
    });
    const items = rows.slice(0, q.limit);
    return {
      items: items.map((dl) => presentDeadLetter(dl)),
      next_cursor: rows.length > q.limit ? (items.at(-1)?.id ?? null) : null,
    };
  });

  app.post<{ Params: { app: string; id: string } }>(
    "/api/v1/admin/apps/:app/dead-letters/:id/replay",
    async (req) => {
      const { app: a } = await adminApp(ctx, req, req.params.app);
      return presentDeadLetter(await replayDeadLetter(database, a.id, req.params.id, clock.iso()));
    },
  );

  app.post<{ Params: { app: string; id: string } }>(
    "/api/v1/admin/apps/:app/dead-letters/:id/ignore",
    async (req) => {
      const { app: a } = await adminApp(ctx, req, req.params.app);
      return presentDeadLetter(await ignoreDeadLetter(database, a.id, req.params.id, clock.iso()));
    },
  );
};
