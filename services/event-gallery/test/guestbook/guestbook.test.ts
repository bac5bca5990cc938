import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gallery, recordEvents, startGallery } from "../core/harness.js";
import { zipEntry, zipNames, zipTest } from "../export/fixtures.js";
import { ffmpegFromSource } from "../media/ffmpeg.js";
import { multipart, setSettings, testMp4 } from "../media/helpers.js";

/** The guestbook (issue 27, contract "Live event"): text and voice, moderation, keepsakes. */
describe("guestbook", () => {
  let g: Gallery;
  let admin: string;
  let host: { token: string; id: string };
  let ann: { token: string; id: string };
  let ben: { token: string; id: string };
  let voice2s: Buffer;

  const post = (token: string, body: unknown) => g.call("POST", "/guestbook", { token, body });
  const list = async (token: string) => {
    const res = await g.call("GET", "/guestbook", { token });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as {
      items: { id: string; text: string; approval: string; voice_url: string | null }[];
    };
  };
  const postVoice = async (token: string, data: Buffer, text?: string) => {
    const body = await multipart(text === undefined ? [] : [["text", text]], {
      data,
      type: "audio/webm",
      name: "voice.webm",
    });
    return g.built.app.inject({
      method: "POST",
      url: "/api/v1/guestbook",
      headers: { ...body.headers, authorization: `Bearer ${token}`, "x-forwarded-for": "10.9.9.9" },
      payload: body.payload,
    });
  };
  const audio = (seconds: number, args: string[], ext: string) =>
    ffmpegFromSource(`sine=frequency=440:duration=${seconds}`, args, ext);
  /** WebM written to a pipe, as a browser's MediaRecorder writes it: no duration in the header. */
  const streamedWebm = (seconds: number) =>
    execFileSync(
      "ffmpeg",
      [
        "-loglevel",
        "error",
        "-f",
        "lavfi",
        "-i",
        `sine=duration=${seconds}`,
        "-c:a",
        "libopus",
        "-b:a",
        "16k",
        "-f",
        "webm",
        "pipe:1",
      ],
      { maxBuffer: 16 * 1024 * 1024 },
    );

  beforeAll(async () => {
    g = await startGallery();
    admin = await g.adminToken();
    host = await g.host("Hanna Host");
    ann = await g.join("Ann");
    ben = await g.join("Ben");
    voice2s = await audio(2, ["-c:a", "libopus"], "webm");
  });
  afterAll(async () => {
    await g.close();
  });

  it("takes a text message (trimmed, 1 to 2,000 characters) and lists it newest first, live to others", async () => {
    const ev = recordEvents(g);
    const first = await post(ann.token, { text: "  Congratulations!  " });
    expect(first.statusCode, first.body).toBe(201);
    const entry = first.json().entry;
    expect(entry).toMatchObject({
      author: { id: ann.id, display_name: "Ann" },
      text: "Congratulations!",
      voice_url: null,
      approval: "approved",
    });
    expect(entry.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    g.clock.advance(1000);
    const second = await post(ben.token, { text: "x".repeat(2000) });
    expect(second.statusCode).toBe(201);
    ev.stop();
    expect(ev.seen.filter((e) => e.event === "guestbook-entry").map((e) => [e.data.id, e.hostsOnly])).toEqual(
      [
        [entry.id, false],
        [second.json().entry.id, false],
      ],
    );
    const items = (await list(ben.token)).items;
    expect(items.map((i) => i.id).slice(0, 2)).toEqual([second.json().entry.id, entry.id]);

    for (const bad of [
      { text: "   " },
      { text: "y".repeat(2001) },
      { text: 5 },
      {},
      { text: "hi", extra: 1 },
    ]) {
      const res = await post(ann.token, bad);
      expect(res.statusCode, JSON.stringify(bad)).toBe(422);
      expect(res.json().error.code).toBe("validation_failed");
    }
    expect((await g.call("POST", "/guestbook", { body: { text: "hi" } })).statusCode).toBe(401);
  });

  it("pages with a cursor", async () => {
    const res = await g.call("GET", "/guestbook?limit=1", { token: ann.token });
    const page = res.json();
    expect(page.items).toHaveLength(1);
    expect(page.next_cursor).toEqual(expect.any(String));
    const next = await g.call("GET", `/guestbook?limit=1&cursor=${page.next_cursor}`, { token: ann.token });
    expect(next.json().items[0].id).not.toBe(page.items[0].id);
    expect((await g.call("GET", "/guestbook?cursor=nonsense", { token: ann.token })).statusCode).toBe(422);
  });

  it("lets the author delete their own entry, hosts take any down, others get 403 not_owner", async () => {
    const mine = (await post(ann.token, { text: "delete me" })).json().entry.id;
    const other = await g.call("DELETE", `/guestbook/${mine}`, { token: ben.token });
    expect(other.statusCode).toBe(403);
    expect(other.json().error.code).toBe("not_owner");
    const ev = recordEvents(g);
    expect((await g.call("DELETE", `/guestbook/${mine}`, { token: ann.token })).statusCode).toBe(204);
    expect((await g.call("DELETE", `/guestbook/${mine}`, { token: ann.token })).statusCode).toBe(404);

    const rude = (await post(ben.token, { text: "rude" })).json().entry.id;
    expect((await g.call("DELETE", `/host/guestbook/${rude}`, { token: ann.token })).statusCode).toBe(403);
    expect((await g.call("DELETE", `/host/guestbook/${rude}`, { token: host.token })).statusCode).toBe(204);
    ev.stop();
    expect(ev.seen.filter((e) => e.event === "guestbook-removed").map((e) => e.data.id)).toEqual([
      mine,
      rude,
    ]);
    const ids = (await list(ann.token)).items.map((i) => i.id);
    expect(ids).not.toContain(mine);
    expect(ids).not.toContain(rude);
    const audit = (await g.call("GET", "/host/audit", { token: host.token })).json().entries;
    expect(audit[0]).toMatchObject({ action: "remove_guestbook_entry" });
  });

  it("refuses banned writers with 403 and hides their entries until unbanned", async () => {
    const carl = await g.join("Carl");
    const said = (await post(carl.token, { text: "before the ban" })).json().entry.id;
    expect((await g.call("POST", `/host/users/${carl.id}/ban`, { token: host.token })).statusCode).toBe(200);
    const res = await post(carl.token, { text: "after" });
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe("banned");
    expect((await g.call("DELETE", `/guestbook/${said}`, { token: carl.token })).json().error.code).toBe(
      "banned",
    );
    expect((await list(ann.token)).items.map((i) => i.id)).not.toContain(said);
    expect((await list(carl.token)).items.map((i) => i.id)).not.toContain(said);
    expect((await g.call("POST", `/host/users/${carl.id}/unban`, { token: host.token })).statusCode).toBe(
      200,
    );
    expect((await list(ann.token)).items.map((i) => i.id)).toContain(said);
  });

  it("holds guests' entries for a host under pre-moderation", async () => {
    await setSettings(g, { premoderation: true });
    try {
      const ev = recordEvents(g);
      const res = await post(ann.token, { text: "waiting" });
      expect(res.json().entry.approval).toBe("pending");
      const id = res.json().entry.id;
      expect((await list(ben.token)).items.map((i) => i.id)).not.toContain(id);
      expect((await list(ann.token)).items.find((i) => i.id === id)?.approval).toBe("pending");
      expect((await list(host.token)).items.find((i) => i.id === id)?.approval).toBe("pending");
      // Hosts' own entries need nobody's approval.
      expect((await post(host.token, { text: "from the hosts" })).json().entry.approval).toBe("approved");
      expect((await g.call("POST", `/host/guestbook/${id}/approve`, { token: ann.token })).statusCode).toBe(
        403,
      );
      const ok = await g.call("POST", `/host/guestbook/${id}/approve`, { token: host.token });
      expect(ok.statusCode).toBe(200);
      expect(ok.json().entry.approval).toBe("approved");
      ev.stop();
      const mine = ev.seen.filter((e) => e.event === "guestbook-entry" && e.data.id === id);
      expect(mine.map((e) => e.hostsOnly)).toEqual([true, false]);
      expect((await list(ben.token)).items.map((i) => i.id)).toContain(id);
    } finally {
      await setSettings(g, { premoderation: false });
    }
  });

  it("takes voice messages only when guestbook_voice is on; audio of at most 60 s, served with ranges", async () => {
    const off = await postVoice(ann.token, voice2s, "hello");
    expect(off.statusCode).toBe(403);
    expect(off.json().error.code).toBe("voice_disabled");
    await setSettings(g, { guestbook_voice: true });
    const ok = await postVoice(ann.token, voice2s, "listen");
    expect(ok.statusCode, ok.body).toBe(201);
    const entry = ok.json().entry;
    expect(entry.text).toBe("listen");
    expect(entry.voice_duration_s).toBeCloseTo(2, 0);
    expect(entry.voice_url).toMatch(new RegExp(`^/api/v1/guestbook/${entry.id}/voice\\?t=`));
    const got = await g.built.app.inject({ method: "GET", url: entry.voice_url });
    expect(got.statusCode).toBe(200);
    expect(got.headers["content-type"]).toBe("audio/webm");
    expect(got.rawPayload.equals(voice2s)).toBe(true);
    const part = await g.built.app.inject({
      method: "GET",
      url: entry.voice_url,
      headers: { range: "bytes=0-9" },
    });
    expect(part.statusCode).toBe(206);
    expect(part.headers["content-range"]).toBe(`bytes 0-9/${voice2s.length}`);
    expect(
      (await g.built.app.inject({ method: "GET", url: entry.voice_url.replace(/\?t=.*/, "") })).statusCode,
    ).toBe(401);

    // Text is optional beside a recording; other browsers' containers are audio too.
    const m4a = await postVoice(ben.token, await audio(1, ["-c:a", "aac"], "m4a"));
    expect(m4a.statusCode, m4a.body).toBe(201);
    expect(m4a.json().entry.text).toBe("");

    const long = await postVoice(ann.token, await audio(61, ["-c:a", "libopus", "-b:a", "16k"], "webm"));
    expect(long.statusCode).toBe(422);
    expect(long.json().error).toMatchObject({ code: "voice_too_long", field: "file", limit: 60 });
    // A recording whose header has no duration is measured by its packets.
    const streamed = await postVoice(ann.token, streamedWebm(3));
    expect(streamed.statusCode, streamed.body).toBe(201);
    expect(streamed.json().entry.voice_duration_s).toBeCloseTo(3, 0);
    expect((await postVoice(ann.token, streamedWebm(65))).json().error.code).toBe("voice_too_long");
    const video = await postVoice(ann.token, await testMp4());
    expect(video.statusCode).toBe(415);
    const junk = await postVoice(ann.token, Buffer.from("not audio at all"));
    expect(junk.statusCode).toBe(415);
    // Nothing of the refused files stays on disk.
    const files = await readdir(join(g.built.ctx.paths.mediaDir, "originals"));
    expect(files.filter((f) => f.startsWith(".tmp-"))).toEqual([]);
    expect(files.filter((f) => f.startsWith(entry.id))).toHaveLength(1);

    // Deleting removes the recording.
    expect((await g.call("DELETE", `/guestbook/${entry.id}`, { token: ann.token })).statusCode).toBe(204);
    expect((await g.built.app.inject({ method: "GET", url: entry.voice_url })).statusCode).toBe(404);
    expect(
      (await readdir(join(g.built.ctx.paths.mediaDir, "originals"))).filter((f) => f.startsWith(entry.id)),
    ).toEqual([]);
    await setSettings(g, { guestbook_voice: false });
  });

  it("answers 403 guestbook_disabled when switched off, and reports the settings in /me/context", async () => {
    const me = (await g.call("GET", "/me/context", { token: ann.token })).json();
    expect(me.event).toMatchObject({ guestbook_enabled: true, guestbook_voice: false, upload_only: false });
    await setSettings(g, { guestbook_enabled: false });
    const res = await post(ann.token, { text: "hi" });
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe("guestbook_disabled");
    await setSettings(g, { guestbook_enabled: true });
  });

  it("shares the social-write bucket (429 with Retry-After)", async () => {
    const dora = await g.join("Dora");
    const up = await post(dora.token, { text: "first" });
    expect(up.statusCode).toBe(201);
    for (let i = 0; i < 119; i++)
      await g.call("PUT", `/upload/00000000-0000-7000-8000-000000000000/like`, { token: dora.token });
    const res = await post(dora.token, { text: "one too many" });
    expect(res.statusCode).toBe(429);
    expect(res.headers["retry-after"]).toBeDefined();
  });

  it("goes into both keepsakes: guestbook.html in Gallery.zip and a guestbook page in Memories.zip", async () => {
    await setSettings(g, { guestbook_voice: true });
    const spoken = (await postVoice(ben.token, voice2s, "A toast <to> you")).json().entry;
    await setSettings(g, { guestbook_voice: false });
    const waitReady = (kind: string) =>
      new Promise<void>((resolve) => {
        const off = g.built.ctx.bus.subscribe((e, d) => {
          if (e === "export-ready" && d.kind === kind) {
            off();
            resolve();
          }
        });
      });
    const ready = Promise.all([waitReady("zip"), waitReady("html")]);
    g.built.startWorkers();
    expect((await g.call("POST", "/host/event/release", { token: admin })).statusCode).toBe(200);
    await ready;
    // Closed with the uploads.
    const closed = await post(ann.token, { text: "too late" });
    expect(closed.statusCode).toBe(403);
    expect(closed.json().error.code).toBe("uploads_locked");

    const fetchZip = async (kind: "zip" | "html") => {
      const t = await g.call("POST", "/export/ticket", { token: ann.token, body: { kind } });
      const res = await g.call(
        "GET",
        `/export/${kind}/download?ticket=${encodeURIComponent(t.json().ticket)}`,
      );
      expect(res.statusCode).toBe(200);
      const file = join(g.dataDir, `${kind}.zip`);
      writeFileSync(file, res.rawPayload);
      zipTest(file);
      return file;
    };
    const gallery = await fetchZip("zip");
    const voiceName = zipNames(gallery).find((n) => n.startsWith("guestbook/") && n.includes(spoken.id));
    expect(voiceName).toMatch(/\.webm$/);
    expect(zipEntry(gallery, voiceName as string).equals(voice2s)).toBe(true);
    const page = zipEntry(gallery, "guestbook.html").toString("utf8");
    expect(page).toContain("Congratulations!");
    expect(page).toContain("A toast &lt;to&gt; you");
    expect(page).toContain(`src="${voiceName}"`);
    expect(page).not.toContain("delete me");
    expect(page).not.toContain("rude");

    const memories = await fetchZip("html");
    expect(zipNames(memories)).toContain("guestbook.html");
    expect(zipNames(memories)).toContain(voiceName);
    expect(zipEntry(memories, "index.html").toString("utf8")).toContain('href="guestbook.html"');
    expect(zipEntry(memories, "guestbook.html").toString("utf8")).toContain("Congratulations!");
  });
});
