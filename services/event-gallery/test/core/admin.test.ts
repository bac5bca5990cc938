import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { newId } from "@app/kit/ids";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gallery, seedUpload, startGallery } from "./harness.js";

const DEFAULTS = {
  event_name: "Our Event",
  quota_tolerance: 0.8,
  upload_rate_per_hour: 100,
  join_ip_rate_per_min: 300,
  recover_ip_rate_per_min: 30,
  feed_rate_per_min: 240,
  delta_rate_per_min: 120,
  export_downloads_per_day: 3,
  max_upload_bytes: 603979776,
  // the event-gallery contract, "Hosts and guests"
  premoderation: false,
  welcome_text_en: "",
  welcome_text_de: "",
  accent_color: "#ff7a59",
  public_url: null,
  guestbook_enabled: true,
  guestbook_voice: false,
  upload_only: false,
};

describe("admin routes", () => {
  let g: Gallery;
  let admin: string;
  beforeAll(async () => {
    g = await startGallery({
      deps: { disk: { stat: async () => ({ free_bytes: 123_456, total_bytes: 987_654 }) } },
    });
    admin = await g.adminToken();
  });
  afterAll(async () => {
    await g.close();
  });

  it("reads and patches the config allowlist with types and ranges", async () => {
    const get = await g.call("GET", "/admin/config", { token: admin });
    expect(get.statusCode).toBe(200);
    expect(get.json()).toEqual({ config: DEFAULTS });

    const patch = await g.call("PATCH", "/admin/config", {
      token: admin,
      body: { event_name: "Ada & Bo's Wedding", quota_tolerance: 0.5, join_ip_rate_per_min: 60 },
    });
    expect(patch.statusCode, patch.body).toBe(200);
    expect(patch.json().config).toEqual({
      ...DEFAULTS,
      event_name: "Ada & Bo's Wedding",
      quota_tolerance: 0.5,
      join_ip_rate_per_min: 60,
    });
    expect((await g.call("GET", "/admin/config", { token: admin })).json().config.quota_tolerance).toBe(0.5);
    expect((await g.call("GET", "/me/context", { token: admin })).json().event.name).toBe(
      "Ada & Bo's Wedding",
    );

    const unknown = await g.call("PATCH", "/admin/config", {
      token: admin,
      body: { event_name: "X", nope: 1 },
    });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json().error).toMatchObject({ code: "unknown_key", field: "nope" });
    const invalid: Record<string, unknown>[] = [
      { quota_tolerance: 2 },
      { quota_tolerance: 0 },
      { event_name: "  " },
      { upload_rate_per_hour: 1.5 },
      { upload_rate_per_hour: "100" },
      { max_upload_bytes: 603979777 },
      { recover_ip_rate_per_min: 0 },
    ];
    for (const body of invalid) {
      const res = await g.call("PATCH", "/admin/config", { token: admin, body });
      expect(res.statusCode, JSON.stringify(body)).toBe(422);
      expect(res.json().error).toMatchObject({ code: "invalid_value", field: Object.keys(body)[0] });
    }
    // A rejected patch changes nothing, not even its valid keys.
    expect((await g.call("GET", "/admin/config", { token: admin })).json().config.event_name).toBe(
      "Ada & Bo's Wedding",
    );

    const host = await g.host("Config Host");
    expect(
      (await g.call("PATCH", "/admin/config", { token: host.token, body: { event_name: "x" } })).statusCode,
    ).toBe(403);
  });

  it("reports disk space from the probe and media bytes by walking the media folder", async () => {
    const media = g.built.ctx.paths.mediaDir;
    mkdirSync(join(media, "originals", "a"), { recursive: true });
    mkdirSync(join(media, "derivatives"), { recursive: true });
    writeFileSync(join(media, "originals", "one.jpg"), Buffer.alloc(1000));
    writeFileSync(join(media, "originals", "a", "two.mp4"), Buffer.alloc(2500));
    writeFileSync(join(media, "derivatives", "one-preview.webp"), Buffer.alloc(300));
    writeFileSync(join(media, "stray.tmp"), Buffer.alloc(7));
    const res = await g.call("GET", "/admin/disk", { token: admin });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      free_bytes: 123_456,
      total_bytes: 987_654,
      media_bytes: 3807,
      originals_bytes: 3500,
      derivatives_bytes: 300,
    });
  });

  it("lists export jobs, the derivative backlog and failed uploads from the tables", async () => {
    const empty = await g.call("GET", "/admin/jobs", { token: admin });
    expect(empty.json()).toEqual({ export_jobs: [], derivative_backlog: 0, failed_uploads: 0 });
    const u = await g.join("Busy Uploader");
    const db = g.built.ctx.database.db;
    await seedUpload(g, u.id);
    await seedUpload(g, u.id);
    const failed = await seedUpload(g, u.id);
    await db
      .updateTable("uploads")
      .set({ compression_status: "failed", deleted_at: g.clock.iso(), deleted_by: "system" })
      .where("id", "=", failed)
      .execute();
    await db
      .insertInto("export_jobs")
      .values({
        id: newId(),
        kind: "zip",
        status: "failed",
        epoch: 1,
        file_path: null,
        size_bytes: null,
        message: "disk full",
        started_at: null,
        finished_at: null,
        updated_at: g.clock.iso(),
      })
      .execute();
    const res = await g.call("GET", "/admin/jobs", { token: admin });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.derivative_backlog).toBe(2);
    expect(body.failed_uploads).toBe(1);
    expect(body.export_jobs).toEqual([
      expect.objectContaining({
        kind: "zip",
        status: "failed",
        epoch: 1,
        progress_pct: 0,
        message: "disk full",
      }),
    ]);
  });
});

describe("database pool exhaustion", () => {
  it("answers 503 database_busy with Retry-After while a write transaction holds the database", async () => {
    const g = await startGallery({ deps: { acquireTimeoutMs: 150, poolSize: 1 } });
    try {
      const u = await g.join("Patient");
      let release!: () => void;
      const held = new Promise<void>((r) => {
        release = r;
      });
      let entered!: () => void;
      const inside = new Promise<void>((r) => {
        entered = r;
      });
      const tx = g.built.ctx.database.writeTx(async () => {
        entered();
        await held;
      });
      await inside;
      // A write must wait for the held writer (reads on SQLite use the reader and do not).
      const res = await g.call("POST", "/stream/ticket", { token: u.token });
      release();
      await tx;
      expect(res.statusCode).toBe(503);
      expect(res.json().error.code).toBe("database_busy");
      expect(Number(res.headers["retry-after"])).toBeGreaterThan(0);
      expect((await g.call("POST", "/stream/ticket", { token: u.token })).statusCode).toBe(201);
    } finally {
      await g.close();
    }
  });
});
