import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { ToolInputError } from "../mcp/format.js";
import { type ToolContext, toolError } from "../mcp/tools.js";
import type { Digest } from "./digest.js";

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true };

/** whats_new: the digest's content on demand, from the bridge's record of what it saw. */
export function registerWhatsNewTool(server: McpServer, ctx: ToolContext, digest: Digest): void {
  server.registerTool(
    "whats_new",
    {
      title: "What's new",
      description:
        "What changed since a time (default: the last digest, else 24 h back), for every child: cancellations, substitutions and room changes today and on the next school day, homework and tasks due by the next school day, new messages of the day, new exams, new portal news. Names any source that failed.",
      inputSchema: {
        since: z.iso
          .datetime({ offset: true })
          .optional()
          .describe("ISO date-time, e.g. 2026-11-23T06:00:00+01:00"),
      },
      outputSchema: {
        since: z.string(),
        until: z.string(),
        next_school_day: z.string(),
        items: z.array(
          z.object({
            section: z.enum(["changes", "due", "messages", "exams", "news"]),
            student: z.string().nullable(),
            text: z.string(),
          }),
        ),
        errors: z.array(z.string()),
      },
      annotations: READ_ONLY,
    },
    async (args) => {
      try {
        const since = args.since === undefined ? undefined : Date.parse(args.since);
        if (since !== undefined && since > ctx.clock.now())
          throw new ToolInputError("since must not be in the future.");
        const { text, ...structured } = await digest.whatsNew(since);
        return { content: [{ type: "text", text }], structuredContent: structured };
      } catch (err) {
        return toolError(err, ctx.logger);
      }
    },
  );
}
