/** Resolves once `cond` holds, checking after each turn of the event loop (no timed sleeps). */
export async function until(cond: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await cond())) await new Promise((r) => setImmediate(r));
}
