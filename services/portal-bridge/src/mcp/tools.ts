import type { Clock } from "@app/kit/clock";
import type { Logger } from "@app/kit/logger";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { KeepAlive } from "../keepalive/keepalive.js";
import type { TokenManager } from "../token/manager.js";
import { type PortalClient, PortalError } from "../upstream/portal.js";
import { TimetableError } from "../upstream/timetable.js";
import {
  checkApiPath,
  checkId,
  DEFAULT_LIMIT,
  decodeCursor,
  encodeCursor,
  MAX_INLINE_CHARS,
  MAX_LIMIT,
  richText,
  ToolInputError,
} from "./format.js";
import { type SchoolTime, stampLabel } from "./time.js";
import type { Child, TimetableService } from "./timetable-service.js";

export interface ToolContext {
  portal: PortalClient;
  tokens: TokenManager;
  keepalive: KeepAlive;
  timetable: TimetableService | null;
  clock: Clock;
  logger: Logger;
  /** SCHOOL_TIMEZONE: every date shown or interpreted is local. */
  time: SchoolTime;
}

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true };

interface ToolOutput {
  structured: Record<string, unknown>;
  text: string;
}

/** Upstream and input failures become tool errors naming the cause; never a secret. */
export function toolError(err: unknown, logger: Logger): CallToolResult {
  let message: string;
  if (err instanceof PortalError) message = `Portal: ${err.message}`;
  else if (err instanceof TimetableError) message = `Timetable: ${err.message}`;
  else if (err instanceof ToolInputError) message = err.message;
  else {
    logger.error({ err_name: (err as Error)?.name }, "tool failed unexpectedly");
    message = "The tool failed unexpectedly.";
  }
  return { isError: true, content: [{ type: "text", text: message }] };
}

type Handler<A> = (args: A) => Promise<ToolOutput>;

function wrap<A>(ctx: ToolContext, fn: Handler<A>) {
  return async (args: A): Promise<CallToolResult> => {
    try {
      const out = await fn(args);
      return { content: [{ type: "text", text: out.text }], structuredContent: out.structured };
    } catch (err) {
      return toolError(err, ctx.logger);
    }
  };
}

const pageInput = {
  limit: z
    .number()
    .int()
    .min(1)
    .max(MAX_LIMIT)
    .default(DEFAULT_LIMIT)
    .describe(`1-${MAX_LIMIT}, default ${DEFAULT_LIMIT}`),
  cursor: z.string().max(200).optional().describe("next_cursor from a previous answer"),
};

const item = z.record(z.string(), z.unknown());

const pageOutput = {
  items: z.array(item),
  total: z.number().int().nullable(),
  next_cursor: z.string().nullable(),
  truncated: z.boolean(),
};

interface UpstreamPage {
  data?: unknown;
  total?: unknown;
  skip?: unknown;
  limit?: unknown;
}

/** One page of an upstream list `{data,total,skip,limit}`, with a cursor for the rest. */
async function listPage(
  ctx: ToolContext,
  path: string,
  args: { limit: number; cursor?: string | undefined },
  line: (x: Record<string, unknown>) => string,
  label: string,
): Promise<ToolOutput> {
  const skip = decodeCursor(args.cursor);
  const page = (await ctx.portal.getJson<UpstreamPage>(path, { skip, limit: args.limit })) ?? {};
  const items = (Array.isArray(page.data) ? page.data : []) as Record<string, unknown>[];
  const total = typeof page.total === "number" ? page.total : null;
  const more = total !== null ? skip + items.length < total : items.length === args.limit;
  const next = more && items.length > 0 ? encodeCursor(skip + items.length) : null;
  const head =
    items.length === 0
      ? `No ${label}.`
      : `${label[0]?.toUpperCase()}${label.slice(1)} ${skip + 1}-${skip + items.length}${total !== null ? ` of ${total}` : ""}:`;
  const tail = next ? `\n(truncated: more ${label} available; call again with cursor "${next}")` : "";
  return {
    structured: { items, total, next_cursor: next, truncated: next !== null },
    text: [head, ...items.map((x) => `- ${line(x)}`)].join("\n") + tail,
  };
}

const str = (v: unknown): string =>
  typeof v === "string" ? v : v === undefined || v === null ? "" : String(v);

/**
 * The upstream session in words. After a 401 the session is gone for good: saying so (and what
 * to do) instead of the last budget seen, which would read as time left.
 */
function sessionLine(
  ctx: ToolContext,
  upstream: ReturnType<KeepAlive["upstreamStatus"]>,
  cause: KeepAlive["cause"],
): string {
  if (cause === "upstream_401")
    return `Portal session: dead (the portal answered 401${upstream.last_error ? `: ${upstream.last_error}` : ""}). Tools that read the portal fail until a new token is pasted: log in to the portal in a browser, copy the jwt cookie and paste it at /token.`;
  const at = upstream.last_ok_at ? ` (as of ${ctx.time.label(Date.parse(upstream.last_ok_at))})` : "";
  const budget =
    upstream.last_budget_s === null
      ? "unknown (no keep-alive answer yet)"
      : `${upstream.last_budget_s} s of ${upstream.idle_timeout_s} s${at}`;
  return `Idle budget: ${budget}${upstream.last_error ? `; last error: ${upstream.last_error}` : ""}`;
}

export function registerPortalTools(server: McpServer, ctx: ToolContext): void {
  server.registerTool(
    "api_get",
    {
      title: "Read any portal API path",
      description:
        "GET a path of the school portal's REST API (must start with /api/, e.g. /api/v3/me). Read-only.",
      inputSchema: {
        path: z
          .string()
          .min(5)
          .max(500)
          .describe("a path starting with /api/, without scheme, host or query"),
        query: z
          .record(z.string().max(100), z.union([z.string().max(1000), z.number(), z.boolean()]))
          .refine((q) => Object.keys(q).length <= 30, "at most 30 query parameters")
          .optional()
          .describe("query parameters"),
      },
      outputSchema: {
        path: z.string(),
        data: z.unknown(),
        truncated: z.boolean(),
        excerpt: z.string().optional(),
      },
      annotations: READ_ONLY,
    },
    wrap(ctx, async ({ path, query }) => {
      checkApiPath(path);
      const data = await ctx.portal.getJson(path, query ?? {});
      const json = JSON.stringify(data ?? null);
      if (json.length > MAX_INLINE_CHARS) {
        const excerpt = json.slice(0, MAX_INLINE_CHARS);
        return {
          structured: { path, data: null, truncated: true, excerpt },
          text: `Truncated: the answer is ${json.length} characters; the first ${MAX_INLINE_CHARS} are in excerpt. Use skip/limit query parameters to page.\n${excerpt.slice(0, 2000)}`,
        };
      }
      return {
        structured: { path, data: data ?? null, truncated: false },
        text: json.length > 4000 ? `${json.slice(0, 4000)}… (full answer in structuredContent)` : json,
      };
    }),
  );

  server.registerTool(
    "get_profile",
    {
      title: "Profile",
      description: "The portal account's user, school and roles (plus timetable user data when configured).",
      inputSchema: {},
      outputSchema: {
        user: z.object({ id: z.string(), first_name: z.string(), last_name: z.string() }),
        school: z.object({ id: z.string(), name: z.string() }).nullable(),
        roles: z.array(z.string()),
        timetable: z.record(z.string(), z.unknown()).nullable(),
        children: z.array(z.object({ id: z.number(), first_name: z.string(), last_name: z.string() })),
        timetable_error: z.string().nullable(),
      },
      annotations: READ_ONLY,
    },
    wrap(ctx, async () => {
      const me =
        (await ctx.portal.getJson<{
          user?: { id?: unknown; firstName?: unknown; lastName?: unknown };
          school?: { id?: unknown; name?: unknown };
          roles?: unknown[];
        }>("/api/v3/me")) ?? {};
      let timetable: Record<string, unknown> | null = null;
      let timetableError: string | null = null;
      let children: Child[] = [];
      if (ctx.timetable) {
        try {
          timetable = await ctx.timetable.userData();
          children = await ctx.timetable.children();
        } catch (err) {
          timetableError = err instanceof Error ? err.message : "timetable failed";
        }
      }
      const roles = (me.roles ?? []).map((r) =>
        typeof r === "object" && r !== null ? str((r as { name?: unknown }).name) : str(r),
      );
      const user = {
        id: str(me.user?.id),
        first_name: str(me.user?.firstName),
        last_name: str(me.user?.lastName),
      };
      const school = me.school ? { id: str(me.school.id), name: str(me.school.name) } : null;
      return {
        structured: { user, school, roles, timetable, children, timetable_error: timetableError },
        text: [
          `${user.first_name} ${user.last_name} (user ${user.id})${school ? `, ${school.name}` : ""}; roles: ${roles.join(", ") || "none"}`,
          timetable
            ? `Timetable account: ${str(timetable.displayName) || "?"} (${str(timetable.elemType) || "?"}${timetable.schoolName ? `, ${str(timetable.schoolName)}` : ""})`
            : null,
          children.length
            ? `Children: ${children.map((c) => `${c.first_name} ${c.last_name} (id ${c.id})`).join(", ")}${children.length > 1 ? "; timetable tools take student (first name or id)" : ""}`
            : null,
          timetableError ? `Timetable: ${timetableError}` : null,
        ]
          .filter(Boolean)
          .join("\n"),
      };
    }),
  );

  server.registerTool(
    "list_tasks",
    {
      title: "Tasks",
      description: "The account's tasks (assignments): open (default) or finished.",
      inputSchema: { status: z.enum(["open", "finished"]).default("open"), ...pageInput },
      outputSchema: pageOutput,
      annotations: READ_ONLY,
    },
    wrap(ctx, async (args) =>
      listPage(
        ctx,
        args.status === "finished" ? "/api/v3/tasks/finished" : "/api/v3/tasks",
        args,
        (t) => {
          const due = ctx.time.portalTime(t.dueDate);
          const desc = richText(t.description, 200).replace(/\n+/g, " ");
          return `${str(t.name)}${t.courseName ? ` (${str(t.courseName)})` : ""}${due ? `, due ${stampLabel(due)}` : ", no due date"}${desc ? `: ${desc}` : ""}`;
        },
        `${args.status} tasks`,
      ),
    ),
  );

  server.registerTool(
    "list_courses",
    {
      title: "Courses",
      description: "The account's courses.",
      inputSchema: pageInput,
      outputSchema: pageOutput,
      annotations: READ_ONLY,
    },
    wrap(ctx, async (args) =>
      listPage(ctx, "/api/v3/courses", args, (c) => `${str(c.title)} (id ${str(c.id)})`, "courses"),
    ),
  );

  server.registerTool(
    "get_course",
    {
      title: "Course board",
      description: "A course's board (its elements: tasks, lessons, columns).",
      inputSchema: { course_id: z.string().min(1).max(64) },
      outputSchema: { course: item },
      annotations: READ_ONLY,
    },
    wrap(ctx, async ({ course_id }) => {
      const board = await ctx.portal.getJson<Record<string, unknown>>(
        `/api/v3/course-rooms/${checkId("course_id", course_id)}/board`,
      );
      const elements = Array.isArray(board?.elements) ? board.elements.length : 0;
      return {
        structured: { course: board ?? {} },
        text: `${str(board?.title)}: ${elements} board element${elements === 1 ? "" : "s"}.`,
      };
    }),
  );

  server.registerTool(
    "list_rooms",
    {
      title: "Rooms",
      description: "The account's rooms.",
      inputSchema: pageInput,
      outputSchema: pageOutput,
      annotations: READ_ONLY,
    },
    wrap(ctx, async (args) =>
      listPage(ctx, "/api/v3/rooms", args, (r) => `${str(r.name)} (id ${str(r.id)})`, "rooms"),
    ),
  );

  server.registerTool(
    "get_room",
    {
      title: "Room",
      description: "A room and its boards.",
      inputSchema: { room_id: z.string().min(1).max(64) },
      outputSchema: { room: item, boards: z.array(item) },
      annotations: READ_ONLY,
    },
    wrap(ctx, async ({ room_id }) => {
      const id = checkId("room_id", room_id);
      const room = (await ctx.portal.getJson<Record<string, unknown>>(`/api/v3/rooms/${id}`)) ?? {};
      const page = await ctx.portal.getJson<UpstreamPage>(`/api/v3/rooms/${id}/boards`);
      const boards = (Array.isArray(page?.data) ? page.data : []) as Record<string, unknown>[];
      return {
        structured: { room, boards },
        text: `${str(room.name)}: ${boards.map((b) => str(b.title)).join(", ") || "no boards"}.`,
      };
    }),
  );

  server.registerTool(
    "list_news",
    {
      title: "News",
      description: "School news, newest first, as plain text.",
      inputSchema: pageInput,
      outputSchema: pageOutput,
      annotations: READ_ONLY,
    },
    wrap(ctx, async (args) => {
      const out = await listPage(
        ctx,
        "/api/v3/news",
        args,
        (n) => {
          const at = ctx.time.portalTime(n.displayAt);
          const body = richText(n.content, 300);
          return `${str(n.title)} (${at ? stampLabel(at) : "undated"}, id ${str(n.id)})${body ? `\n  ${body.replace(/\n+/g, " ")}` : ""}`;
        },
        "news",
      );
      // The original markup stays; `text` is the rendering.
      const items = (out.structured.items as Record<string, unknown>[]).map((n) => ({
        ...n,
        text: richText(n.content),
      }));
      return { ...out, structured: { ...out.structured, items } };
    }),
  );

  server.registerTool(
    "get_news",
    {
      title: "News item",
      description: "One news item with its HTML converted to text.",
      inputSchema: { news_id: z.string().min(1).max(64) },
      outputSchema: {
        id: z.string(),
        title: z.string(),
        display_at: z.string().nullable(),
        text: z.string(),
        content: z.unknown(),
      },
      annotations: READ_ONLY,
    },
    wrap(ctx, async ({ news_id }) => {
      const n =
        (await ctx.portal.getJson<Record<string, unknown>>(`/api/v3/news/${checkId("news_id", news_id)}`)) ??
        {};
      const text = richText(n.content);
      const at = ctx.time.portalTime(n.displayAt);
      return {
        structured: {
          id: str(n.id),
          title: str(n.title),
          display_at: n.displayAt ? str(n.displayAt) : null,
          text,
          content: n.content ?? null,
        },
        text: `${str(n.title)}${at ? ` (${stampLabel(at)})` : ""}\n\n${text}`,
      };
    }),
  );

  server.registerTool(
    "connection_status",
    {
      title: "Connection status",
      description:
        "Upstream token expiry, idle budget, keep-alive state and timetable reachability. No secrets.",
      inputSchema: {},
      outputSchema: {
        portal_configured: z.boolean(),
        token: z.record(z.string(), z.unknown()),
        upstream: z.record(z.string(), z.unknown()),
        keepalive: z.record(z.string(), z.unknown()),
        timetable: z.object({
          configured: z.boolean(),
          reachable: z.boolean().nullable(),
          error: z.string().nullable(),
        }),
      },
      annotations: READ_ONLY,
    },
    wrap(ctx, async () => {
      const token = ctx.tokens.status();
      const upstream = ctx.keepalive.upstreamStatus();
      const keepalive = ctx.keepalive.status();
      let timetable = { configured: false, reachable: null as boolean | null, error: null as string | null };
      if (ctx.timetable) {
        try {
          await ctx.timetable.userData(true);
          timetable = { configured: true, reachable: true, error: null };
        } catch (err) {
          timetable = {
            configured: true,
            reachable: false,
            error: err instanceof Error ? err.message : "failed",
          };
        }
      }
      const lines = [
        `Portal: ${ctx.portal.configured ? "configured" : "not configured (PORTAL_BASE_URL unset)"}`,
        token.present
          ? `Token: from ${token.source}, expires ${token.expires_at ? ctx.time.label(Date.parse(token.expires_at)) : "?"} (${ctx.time.zone}) (in ${Math.floor((token.expires_in_s ?? 0) / 86400)} days)`
          : "Token: none; paste one at /token",
        sessionLine(ctx, upstream, ctx.keepalive.cause),
        `Keep-alive: ${keepalive.state}${keepalive.stopped_reason ? ` (${keepalive.stopped_reason})` : ""}${keepalive.next_at ? `, next at ${keepalive.next_at}` : ""}`,
        `Timetable: ${timetable.configured ? (timetable.reachable ? "reachable" : `unreachable: ${timetable.error}`) : "not configured"}`,
      ];
      return {
        structured: {
          portal_configured: ctx.portal.configured,
          token: { ...token },
          upstream: { ...upstream },
          keepalive: { ...keepalive },
          timetable,
        },
        text: lines.join("\n"),
      };
    }),
  );
}
