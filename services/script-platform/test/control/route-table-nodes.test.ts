import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadEnv } from "@app/kit/config";
import { testBackend } from "@app/kit/db/testing";
import { captureLogger } from "@app/kit/logger";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type BuiltApp, buildApp } from "../../src/app.js";
import { envSpec } from "../../src/config.js";
import { type Harness, startHarness } from "./harness.js";

// Two nodes on one PostgreSQL database: a route change on one reaches the other through LISTEN/NOTIFY.
describe.runIf(testBackend() === "postgres")("route table across nodes (PostgreSQL)", () => {
  let h: Harness;
  let second: BuiltApp;
  let dir: string;
  beforeAll(async () => {
    h = await startHarness();
    dir = mkdtempSync(join(tmpdir(), "sp-node2-"));
    const config = loadEnv(envSpec, {
      DATA_DIR: dir,
      DATABASE_URL: h.built.ctx.config.DATABASE_URL,
      PLATFORM_SECRET_KEY: "ab".repeat(32),
    });
    second = await buildApp(config, { logger: captureLogger().logger, announce: () => {} });
  });
  afterAll(async () => {
    await second.app.close();
    await second.close();
    rmSync(dir, { recursive: true, force: true });
    await h.close();
  });

  it("refreshes the other node's table on route, script and domain changes", async () => {
    const app = (await h.call("POST", "/api/v1/admin/apps", { slug: "nodes" })).json();
    await h.call("POST", `/api/v1/admin/apps/${app.id}/domains`, { host: "nodes.test" });
    const s = (
      await h.call("POST", "/api/v1/admin/scripts", {
        app_id: app.id,
        name: "n",
        source: "export default () => 1",
      })
    ).json();
    const route = (
      await h.call("POST", `/api/v1/admin/scripts/${s.id}/routes`, { path: "/n", method: "GET" })
    ).json();
    await vi.waitFor(
      () => expect(second.ctx.routeTable.match("nodes.test", "GET", "/n")?.route.id).toBe(route.id),
      {
        timeout: 5000,
        interval: 20,
      },
    );
    // The table carries the routed script: a save on one node reaches the other's table.
    expect(second.ctx.routeTable.match("nodes.test", "GET", "/n")?.script).toMatchObject({ version: 1 });
    const put = await h.call("PUT", `/api/v1/admin/scripts/${s.id}`, { source: "export default () => 2" });
    expect(put.statusCode).toBe(200);
    await vi.waitFor(
      () =>
        expect(second.ctx.routeTable.match("nodes.test", "GET", "/n")?.script).toMatchObject({
          version: 2,
          source: "export default () => 2",
        }),
      { timeout: 5000, interval: 20 },
    );
    // A change that sent no notification is picked up by the periodic resync.
    await h.built.ctx.database.db
      .insertInto("routes")
      .values({
        ...route,
        id: "019a0000-0000-7000-8000-00000000beef",
        path: "/silent",
        created_at: h.clock.iso(),
      })
      .execute();
    expect(h.built.ctx.routeTable.match("nodes.test", "GET", "/silent")).toBeNull();
    await h.clock.advance(60_000);
    await vi.waitFor(
      () => expect(h.built.ctx.routeTable.match("nodes.test", "GET", "/silent")).not.toBeNull(),
      {
        timeout: 5000,
        interval: 20,
      },
    );
    await h.call("DELETE", `/api/v1/admin/routes/${route.id}`);
    await vi.waitFor(() => expect(second.ctx.routeTable.match("nodes.test", "GET", "/n")).toBeNull(), {
      timeout: 5000,
      interval: 20,
    });
  });
});
