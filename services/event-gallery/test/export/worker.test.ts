import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createBrandingService } from "../../src/branding/service.js";
import type { ExportKind } from "../../src/db/schema.js";
import { bumpEpochIfReleased } from "../../src/event/state.js";
import { type BuildHooks, createKeepsakeBuilder } from "../../src/export/builder.js";
import { createExportWorker, type ExportWorker } from "../../src/export/worker.js";
import { type Gallery, startGallery } from "../core/harness.js";
import { addUpload } from "./fixtures.js";

/**
 * The export worker's guarantees, with a worker driven by the test (the app's own worker only
 * starts when the server listens): epoch-guarded claims, abandoning superseded builds, failures
 * with host-only messages, and the host's rebuild.
 */
describe("export worker", () => {
  const open: { g: Gallery; w: ExportWorker }[] = [];
  const disk = { free: 50e9 };

  /** A worker over the app's context, built as app.ts builds its own. */
  function workerOf(g: Gallery, hooks: BuildHooks = {}): ExportWorker {
    const ctx = g.built.ctx;
    const branding = createBrandingService(ctx);
    return createExportWorker({ ...ctx, builder: createKeepsakeBuilder({ ...ctx, branding, hooks }) });
  }

  async function setup(hooks: BuildHooks = {}) {
    disk.free = 50e9;
    const g = await startGallery({
      deps: { disk: { stat: async () => ({ free_bytes: disk.free, total_bytes: 100e9 }) } },
    });
    const w = workerOf(g, hooks);
    open.push({ g, w });
    w.start();
    await w.idle();
    const admin = await g.adminToken();
    const guest = await g.join("Dora");
    for (let i = 0; i < 3; i++) await addUpload(g, guest.id, { caption: `photo ${i}`, hue: i * 60 });
    return { g, w, admin, guest };
  }
  afterEach(async () => {
    for (const { g, w } of open.splice(0)) {
      await w.stop();
      await g.close();
    }
  });

  const jobs = (g: Gallery) =>
    g.built.ctx.database.db.selectFrom("export_jobs").selectAll().orderBy("kind").execute();
  const archives = (g: Gallery) => readdirSync(g.built.ctx.paths.exportsDir);
  const bump = (g: Gallery) =>
    g.built.ctx.database.writeTx((trx) => bumpEpochIfReleased(trx, g.clock)).then(() => undefined);

  it("a worker whose jobs were superseded before the claim fails the claim and does no work", async () => {
    const { g, w, admin } = await setup();
    expect((await g.call("POST", "/host/event/release", { token: admin })).statusCode).toBe(200);
    await bump(g); // a removal committed before any worker claimed the epoch-1 jobs
    w.kick();
    await w.idle();
    const rows = await jobs(g);
    expect(rows.map((j) => [j.kind, j.status, j.epoch, j.started_at])).toEqual([
      ["html", "pending", 1, null],
      ["zip", "pending", 1, null],
    ]);
    expect(archives(g)).toEqual([]);
  });

  it("two workers racing for the same jobs build each archive once", async () => {
    const { g, w, admin } = await setup();
    const other = workerOf(g);
    other.start();
    await other.idle();
    const ready: string[] = [];
    g.built.ctx.bus.subscribe((e, d) => e === "export-ready" && ready.push(String(d.kind)));
    await g.call("POST", "/host/event/release", { token: admin });
    w.kick();
    other.kick();
    await Promise.all([w.idle(), other.idle()]);
    await other.stop();
    expect(ready.sort()).toEqual(["html", "zip"]);
    expect(archives(g)).toHaveLength(2);
    expect((await jobs(g)).every((j) => j.status === "done" && j.epoch === 1)).toBe(true);
  });

  it("a running build that sees a newer epoch between entries abandons without leaving a file", async () => {
    let g!: Gallery;
    const seen: { kind: ExportKind; index: number; status: string; pct: number }[] = [];
    const hooks: BuildHooks = {
      async beforeEntry(kind, index) {
        const job = (await jobs(g)).find((j) => j.kind === kind)!;
        seen.push({ kind, index, status: job.status, pct: job.progress_pct });
        if (kind === "zip" && index === 2 && job.epoch === 1) {
          await bump(g);
          g.built.ctx.bus.publish("upload-removed", { id: "x" });
        }
      },
    };
    const s = await setup(hooks);
    g = s.g;
    await g.call("POST", "/host/event/release", { token: s.admin });
    s.w.kick();
    await s.w.idle();
    // Progress was reported while running.
    expect(seen.filter((x) => x.kind === "zip").map((x) => x.status)).toEqual([
      "running",
      "running",
      "running",
    ]);
    expect(seen.find((x) => x.kind === "zip" && x.index === 2)!.pct).toBeGreaterThan(0);
    const rows = await jobs(g);
    // The zip run handed its row back; html (not yet claimed) was superseded before its claim.
    expect(rows.map((j) => [j.kind, j.status, j.epoch])).toEqual([
      ["html", "pending", 1],
      ["zip", "pending", 1],
    ]);
    expect(archives(g)).toEqual([]);
    const status = (await g.call("GET", "/export/status", { token: s.admin })).json();
    expect(status).toMatchObject({ epoch: 2, zip: { status: "pending", ready: false } });

    // 20 s after the removal the debounce re-arms both at the current epoch and they build.
    await g.clock.advance(20_000);
    await s.w.idle();
    expect((await jobs(g)).map((j) => [j.kind, j.status, j.epoch])).toEqual([
      ["html", "done", 2],
      ["zip", "done", 2],
    ]);
    expect(archives(g)).toHaveLength(2);
  });

  it("fails a build that would not fit the disk; hosts see why, guests do not; rebuild re-arms", async () => {
    const { g, w, admin, guest } = await setup();
    disk.free = 1000; // far below the originals plus 10 % for two archives
    await g.call("POST", "/host/event/release", { token: admin });
    w.kick();
    await w.idle();
    const rows = await jobs(g);
    expect(rows.map((j) => j.status)).toEqual(["failed", "failed"]);
    expect(archives(g)).toEqual([]);

    const hostView = (await g.call("GET", "/export/status", { token: admin })).json();
    expect(hostView.zip.status).toBe("failed");
    expect(hostView.zip.message).toMatch(/^Not enough free disk space/);
    const guestView = (await g.call("GET", "/export/status", { token: guest.token })).json();
    expect(guestView.zip).toEqual({ status: "failed", progress_pct: 0, ready: false });
    expect((await g.call("GET", "/host/event", { token: admin })).json().low_disk_warning).toBe(true);

    expect((await g.call("POST", "/host/export/rebuild", { token: guest.token })).statusCode).toBe(403);
    disk.free = 50e9;
    const rebuild = await g.call("POST", "/host/export/rebuild", { token: admin });
    expect(rebuild.statusCode).toBe(202);
    expect(rebuild.json().jobs.map((j: { status: string }) => j.status)).toEqual(["pending", "pending"]);
    w.kick();
    await w.idle();
    const after = (await g.call("GET", "/export/status", { token: guest.token })).json();
    expect(after).toMatchObject({
      zip: { status: "done", ready: true },
      html: { status: "done", ready: true },
    });
    const again = await g.call("POST", "/host/export/rebuild", { token: admin });
    expect(again.statusCode).toBe(409);
  });

  it("fails with a path-free message when an original is missing, leaving no zip behind", async () => {
    const { g, w, admin } = await setup();
    rmSync(join(g.built.ctx.paths.mediaDir, "originals"), { recursive: true });
    await g.call("POST", "/host/event/release", { token: admin });
    w.kick();
    await w.idle();
    const status = (await g.call("GET", "/export/status", { token: admin })).json();
    expect(status.zip.status).toBe("failed");
    expect(status.zip.message).toBe("A media file of a visible upload is missing on disk.");
    // Memories.zip needs only the display images, which are still there.
    expect(status.html.status).toBe("done");
    expect(archives(g).filter((f) => f.startsWith("zip-") || f.startsWith(".tmp-"))).toEqual([]);
  });

  it("stopping mid-build hands the job back as pending for the next start", async () => {
    let w!: ExportWorker;
    const s = await setup({
      async beforeEntry(kind, index) {
        if (kind === "zip" && index === 1) void w.stop();
      },
    });
    w = s.w;
    await s.g.call("POST", "/host/event/release", { token: s.admin });
    w.kick();
    await w.idle();
    expect((await jobs(s.g)).map((j) => [j.kind, j.status])).toEqual([
      ["html", "pending"],
      ["zip", "pending"],
    ]);
    expect(archives(s.g)).toEqual([]);
    const next = workerOf(s.g);
    next.start();
    await next.idle();
    await next.stop();
    expect((await jobs(s.g)).map((j) => j.status)).toEqual(["done", "done"]);
  });
});
