import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../src/clock.js";
import { createHttpApp } from "../src/http/app.js";
import { openSse, type SseStream } from "../src/http/sse.js";
import { captureLogger } from "../src/logger.js";

async function sseServer(opts: { maxBufferBytes?: number; clock?: FakeClock }) {
  const app = createHttpApp({ logger: captureLogger().logger });
  const streams: SseStream[] = [];
  let onOpen: (s: SseStream) => void = () => {};
  app.get("/events", (_req, reply) => {
    const s = openSse(reply, { heartbeatMs: 25_000, ...opts });
    streams.push(s);
    onOpen(s);
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const { port } = app.server.address() as AddressInfo;
  const opened = () => new Promise<SseStream>((resolve) => (onOpen = resolve));
  return { app, port, streams, opened };
}

function connect(port: number) {
  let body = "";
  const waiters: { pred: (b: string) => boolean; resolve: () => void }[] = [];
  const req = request({ host: "127.0.0.1", port, path: "/events" });
  const ready = new Promise<import("node:http").IncomingMessage>((resolve) => {
    req.on("response", (res) => {
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
        for (const w of waiters.splice(0)) {
          if (w.pred(body)) w.resolve();
          else waiters.push(w);
        }
      });
      resolve(res);
    });
  });
  req.on("error", () => {});
  req.end();
  const until = (pred: (b: string) => boolean) =>
    pred(body) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ pred, resolve }));
  return { req, ready, until, body: () => body };
}

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0)) await c();
});

describe("SSE writer", () => {
  it("closes streams opened inside an encapsulated (prefixed) plugin when the app closes", async () => {
    const app = createHttpApp({ logger: captureLogger().logger });
    let opened!: (s: SseStream) => void;
    const got = new Promise<SseStream>((r) => (opened = r));
    await app.register(
      async (api) => {
        api.get("/events", (_req, reply) => opened(openSse(reply, { heartbeatMs: 0 })));
      },
      { prefix: "/api/v1" },
    );
    await app.listen({ port: 0, host: "127.0.0.1" });
    const { port } = app.server.address() as AddressInfo;
    const req = request({ host: "127.0.0.1", port, path: "/api/v1/events" });
    req.on("error", () => {});
    req.end();
    const stream = await got;
    await app.close(); // would hang if the stream were not found
    expect(stream.closed).toBe(true);
  });

  it("frames events, sends heartbeats on the clock, and closes on app shutdown", async () => {
    const clock = new FakeClock();
    const srv = await sseServer({ clock });
    const opened = srv.opened();
    const client = connect(srv.port);
    const res = await client.ready;
    expect(res.headers["content-type"]).toBe("text/event-stream; charset=utf-8");
    const stream = await opened;
    stream.send("new-upload", { id: "u1", text: "two\nlines" }, "42");
    await client.until((b) => b.includes('data: {"id":"u1"'));
    expect(client.body()).toContain('id: 42\nevent: new-upload\ndata: {"id":"u1","text":"two\\nlines"}\n\n');
    await clock.advance(25_000);
    await client.until((b) => b.includes(": ping"));
    const ended = new Promise<void>((resolve) => res.on("end", () => resolve()));
    await srv.app.close();
    await ended;
    expect(stream.closed).toBe(true);
  });

  it("drops a client that stops reading instead of buffering without bound", async () => {
    const srv = await sseServer({ maxBufferBytes: 256 * 1024 });
    cleanup.push(() => srv.app.close());
    const opened = srv.opened();
    const client = connect(srv.port);
    const res = await client.ready;
    res.pause(); // a slow client: nothing is read from here on
    const stream = await opened;
    const chunk = "x".repeat(64 * 1024);
    let sent = 0;
    while (stream.send("bulk", chunk) && sent < 2000) sent++;
    expect(stream.dropped).toBe(true);
    expect(stream.closed).toBe(true);
    // Bounded: it gave up long before pushing 2000 × 64 KiB.
    expect(sent).toBeLessThan(2000);
    expect(stream.send("after", "nothing")).toBe(false);
    client.req.destroy();
  });
});
