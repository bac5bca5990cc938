import { describe, expect, it } from "vitest";
import { createTestEnv } from "../src/db/testing.js";
import { openDatabase } from "../src/db.js";
import { createHttpApp, registerHealth } from "../src/http/app.js";
import { startServer } from "../src/http/server.js";
import { captureLogger } from "../src/logger.js";

describe("startServer", () => {
  it("prints its URL, and on stop drains, then closes the database", async () => {
    const env = await createTestEnv("ksrv");
    const database = openDatabase({ url: env.databaseUrl, sqliteFile: env.sqliteFile });
    await database.migrate([]);
    const logs = captureLogger();
    const app = createHttpApp({ logger: logs.logger });
    registerHealth(app);
    let release!: () => void;
    let entered!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    const inHandler = new Promise<void>((r) => (entered = r));
    app.get("/slow", async () => {
      entered();
      await slow;
      return { done: true };
    });
    const server = await startServer(app, {
      host: "127.0.0.1",
      port: 0,
      logger: logs.logger,
      signals: false,
      onClose: () => database.close(),
    });
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(logs.text()).toContain(`listening on ${server.url}`);
    expect(await (await fetch(`${server.url}/healthz`)).text()).toBe("ok");

    const inflight = fetch(`${server.url}/slow`).then((r) => r.json());
    await inHandler;
    const stopped = server.stop();
    release();
    expect(await inflight).toEqual({ done: true }); // in-flight work finished
    await stopped;
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow(); // no longer accepting
    await expect(
      database.db
        .selectFrom("schema_migrations" as never)
        .selectAll()
        .execute(),
    ).rejects.toThrow();
    await env.cleanup();
  });
});
