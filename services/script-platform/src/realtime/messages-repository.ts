import type { Database } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";

/** One logged realtime message (its JSON text as published). */
export interface RealtimeMessageRow {
  seq: number;
  app_id: string;
  topic: string;
  message: string;
}

/** Reads of the realtime_messages log (written by the pubsub event sink in dispatch/). */
export function messagesRepo(database: Database<PlatformDB>) {
  return {
    /** The highest seq logged so far (0 when empty). */
    async maxSeq(): Promise<number> {
      const r = await database.db
        .selectFrom("realtime_messages")
        .select((eb) => eb.fn.max("seq").as("m"))
        .executeTakeFirst();
      return Number(r?.m ?? 0);
    },
    /** Messages with seq above `seq`, in seq order, at most `limit`. */
    async after(seq: number, limit: number): Promise<RealtimeMessageRow[]> {
      const rows = await database.db
        .selectFrom("realtime_messages")
        .select(["seq", "app_id", "topic", "message"])
        .where("seq", ">", seq)
        .orderBy("seq")
        .limit(limit)
        .execute();
      return rows.map((r) => ({ ...r, seq: Number(r.seq) }));
    },
    /** The JSON text of message `seq`, or null when it is gone. */
    async message(seq: number): Promise<string | null> {
      const r = await database.db
        .selectFrom("realtime_messages")
        .select("message")
        .where("seq", "=", seq)
        .executeTakeFirst();
      return r?.message ?? null;
    },
  };
}
export type MessagesRepo = ReturnType<typeof messagesRepo>;
