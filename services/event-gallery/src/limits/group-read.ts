/**
 * Group read: many concurrent reads of the same kind in one statement. The first request is sent
 * at once; requests that arrive while a statement is in flight are answered together by the next
 * one (at most `maxBatch` per statement). Every statement is sent after each request it answers
 * arrived, so it sees everything committed before that request, exactly as a read of its own
 * would: one round trip and one pooled connection per batch instead of per request. `run` gets
 * the batch in arrival order and returns one answer per request, in the same order.
 * Keep one per app instance (it holds the queue).
 */
export function groupRead<Req, Res>(
  run: (batch: readonly Req[]) => Promise<Res[]>,
  maxBatch = 500,
): (req: Req) => Promise<Res> {
  interface Waiter {
    req: Req;
    resolve: (res: Res) => void;
    reject: (err: unknown) => void;
  }
  let queued: Waiter[] = [];
  let draining = false;

  const drain = async () => {
    draining = true;
    try {
      while (queued.length > 0) {
        const batch = queued.slice(0, maxBatch);
        queued = queued.slice(batch.length);
        try {
          const answers = await run(batch.map((w) => w.req));
          if (answers.length !== batch.length) throw new Error("group read: one answer per request expected");
          for (const [i, w] of batch.entries()) w.resolve(answers[i] as Res);
        } catch (err) {
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      draining = false;
    }
  };

  return (req) =>
    new Promise<Res>((resolve, reject) => {
      queued.push({ req, resolve, reject });
      if (!draining) void drain();
    });
}
