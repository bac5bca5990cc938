import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A webhook receiver (ntfy, Gotify, Slack stand-in) that records every POST. `check` models a
 * service that refuses other shapes: a non-null answer is the reason, sent back with 400.
 */
export class WebhookReceiver {
  readonly got: { headers: IncomingHttpHeaders; body: string }[] = [];
  /** Status answered to accepted posts. */
  status = 200;
  url = "";
  private server: Server | null = null;

  constructor(
    private readonly check: (headers: IncomingHttpHeaders, body: string) => string | null = () => null,
  ) {}

  async start(path = "/s3cret-topic"): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        const problem = this.check(req.headers, body);
        if (!problem) this.got.push({ headers: req.headers, body });
        res.writeHead(problem ? 400 : this.status).end(problem ?? "ok");
      });
    });
    await new Promise<void>((r) => this.server?.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
    return this.url;
  }

  /** The JSON bodies received. */
  json<T = Record<string, unknown>>(): T[] {
    return this.got.map((g) => JSON.parse(g.body) as T);
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
