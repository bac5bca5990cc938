import { createConnection, createServer, type Server, type Socket } from "node:net";

/**
 * A TCP proxy for outage tests: `cut()` drops every connection abruptly (a router or proxy
 * dying), `stop()` also refuses new ones until `start()` listens again on the same port.
 */
export interface TcpProxy {
  readonly port: number;
  /** `url` with its host and port replaced by the proxy's. */
  rewrite(url: string): string;
  /** Connections currently open through the proxy. */
  readonly open: number;
  cut(): void;
  stop(): Promise<void>;
  start(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let server: Server | null = null;
  let port = 0;
  const listen = async () => {
    const s = createServer((client) => {
      const upstream = createConnection(target);
      for (const sock of [client, upstream]) {
        sockets.add(sock);
        sock.on("close", () => sockets.delete(sock));
        sock.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      s.once("error", reject);
      s.listen(port, "127.0.0.1", () => resolve());
    });
    const addr = s.address();
    if (addr && typeof addr === "object") port = addr.port;
    server = s;
  };
  await listen();
  const cut = () => {
    for (const sock of sockets) sock.resetAndDestroy();
    sockets.clear();
  };
  return {
    get port() {
      return port;
    },
    get open() {
      return sockets.size / 2;
    },
    rewrite(url) {
      const u = new URL(url);
      u.hostname = "127.0.0.1";
      u.port = String(port);
      return u.toString();
    },
    cut,
    async stop() {
      const s = server;
      server = null;
      cut();
      if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
    },
    async start() {
      if (!server) await listen();
    },
  };
}
