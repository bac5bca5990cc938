import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gallery, seedUpload, startGallery } from "../core/harness.js";

/**
 * GET /admin/failed-uploads (issue 14, item 7): the uploads whose derivatives failed, with their
 * uploader and the reason (without paths), newest first; admin only. The API has no retry, so
 * the admin page shows it read-only.
 */
describe("admin: failed uploads", () => {
  let g: Gallery;
  let admin: string;
  let ann: { token: string; id: string };

  beforeAll(async () => {
    g = await startGallery();
    admin = await g.adminToken();
    ann = await g.join("Ann");
  });
  afterAll(async () => {
    await g.close();
  });

  const fail = async (id: string, error: string, reclaimed = false) => {
    await g.built.ctx.database.db
      .updateTable("uploads")
      .set({
        compression_status: "failed",
        derivative_attempts: 3,
        derivative_last_error: error,
        deleted_at: g.clock.iso(),
        ...(reclaimed ? { original_path: "" } : {}),
      })
      .where("id", "=", id)
      .execute();
  };

  it("lists failed uploads newest first with the reason, without filesystem paths; guests and hosts are refused", async () => {
    const ok = await seedUpload(g, ann.id);
    const first = await seedUpload(g, ann.id, { size: 1234 });
    await g.clock.advance(1000);
    const second = await seedUpload(g, ann.id);
    await fail(first, "Input file contains unsupported image format", true);
    await fail(second, "ffmpeg exited with 1: /var/lib/gallery/tmp/x.mp4: Invalid data found");

    const res = await g.call("GET", "/admin/failed-uploads", { token: admin });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.total).toBe(2);
    expect(body.items.map((i: { id: string }) => i.id)).toEqual([second, first]);
    expect(body.items.some((i: { id: string }) => i.id === ok)).toBe(false);
    expect(body.items[1]).toEqual({
      id: first,
      uploader: { id: ann.id, display_name: "Ann" },
      mime_type: "image/jpeg",
      size_bytes: 1234,
      created_at: expect.any(String),
      failed_at: expect.any(String),
      attempts: 3,
      reason: "Input file contains unsupported image format",
      original_kept: false,
    });
    expect(body.items[0].reason).toBe("ffmpeg exited with 1: <path>: Invalid data found");
    expect(body.items[0].original_kept).toBe(true);
    expect(res.body).not.toContain("/var/lib");

    expect((await g.call("GET", "/admin/failed-uploads", { token: ann.token })).statusCode).toBe(403);
    const host = await g.host("Hanna");
    expect((await g.call("GET", "/admin/failed-uploads", { token: host.token })).statusCode).toBe(403);
    expect((await g.call("GET", "/admin/failed-uploads")).statusCode).toBe(401);
    // The overview's count agrees with the list.
    expect((await g.call("GET", "/admin/jobs", { token: admin })).json().failed_uploads).toBe(2);
  });
});
