import { request } from "node:http";
import type { FakeClock } from "@app/kit/clock";

/** A raw SSE client over node:http (sets any Host header), collecting the stream's text. */
export interface SseClient {
  status: number;
  text(): string;
  /** Resolves once the stream contains `needle`, advancing the fake clock so pollers run. */
  waitFor(needle: string, clock: FakeClock): Promise<void>;
  /** Resolves when the server ends the stream. */
  ended(): Promise<void>;
  close(): void;
}

export function openSseClient(
  port: number,
  path: string,
  headers: Record<string, string>,
): Promise<SseClient> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, headers }, (res) => {
      let buf = "";
      const end = new Promise<void>((r) => res.on("close", () => r()));
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        buf += c;
      });
      res.on("error", () => {});
      resolve({
        status: res.statusCode ?? 0,
        text: () => buf,
        async waitFor(needle, clock) {
          // Up to 15 s of real time (a loaded CI machine, NOTIFY across processes); the fake
          // clock moves at most 20 s so a 30 s subscriber token cannot expire during the wait.
          const deadline = Date.now() + 15_000;
          for (let advanced = 0; !buf.includes(needle) && Date.now() < deadline; ) {
            if (advanced < 20_000) {
              await clock.advance(100);
              advanced += 100;
            }
            // real-time: scripts run in worker threads on the wall clock; a short real pause lets their
            // messages in before the fake clock moves again (the loop ends on the condition, not the pause).
            await new Promise((r) => setTimeout(r, 10));
          }
          if (!buf.includes(needle)) throw new Error(`stream never contained ${needle}; got ${buf}`);
        },
        ended: () => end,
        close: () => req.destroy(),
      });
    });
    req.on("error", reject);
    req.end();
  });
}
