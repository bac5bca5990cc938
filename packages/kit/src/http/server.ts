import type { FastifyInstance } from "fastify";
import type { Logger } from "../logger.js";

export interface RunningServer {
  url: string;
  /** Stops accepting, drains in-flight work, then runs `onClose` (closing the database). */
  stop(): Promise<void>;
}

/**
 * Listen, print `listening on http://…`, and stop cleanly on SIGTERM/SIGINT within `graceMs`
 * (the common contract: within 10 s). A second signal or the deadline forces the exit.
 */
export async function startServer(
  app: FastifyInstance,
  opts: {
    host: string;
    port: number;
    logger: Logger;
    onClose?: () => Promise<void>;
    graceMs?: number;
    signals?: boolean;
  },
): Promise<RunningServer> {
  await app.listen({ host: opts.host, port: opts.port });
  const addr = app.server.address();
  const port = typeof addr === "object" && addr ? addr.port : opts.port;
  const host = opts.host.includes(":") ? `[${opts.host}]` : opts.host;
  const url = `http://${host}:${port}`;
  opts.logger.info({ url }, `listening on ${url}`);

  let stopping: Promise<void> | null = null;
  const stop = () => {
    stopping ??= (async () => {
      const grace = opts.graceMs ?? 10_000;
      const force = setTimeout(() => app.server.closeAllConnections?.(), Math.max(0, grace - 2000));
      force.unref();
      try {
        await app.close();
      } finally {
        clearTimeout(force);
        await opts.onClose?.();
      }
    })();
    return stopping;
  };

  if (opts.signals !== false) {
    const onSignal = (sig: NodeJS.Signals) => {
      if (stopping) {
        opts.logger.warn({ signal: sig }, "second signal: exiting now");
        process.exit(1);
      }
      opts.logger.info({ signal: sig }, "shutting down");
      const hard = setTimeout(() => {
        opts.logger.error("shutdown took too long; exiting");
        process.exit(1);
      }, opts.graceMs ?? 10_000);
      hard.unref();
      stop().then(
        () => {
          opts.logger.info("stopped");
          process.exit(0);
        },
        (err) => {
          opts.logger.error({ err }, "shutdown failed");
          process.exit(1);
        },
      );
    };
    process.once("SIGTERM", onSignal);
    process.once("SIGINT", onSignal);
  }
  return { url, stop };
}
