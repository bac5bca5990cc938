import { execFileSync } from "node:child_process";
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { launchChromium } from "@app/kit/testing/browser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import yazl from "yazl";
import {
  patchedStream,
  VIEWER_LANG_ENTRY,
  viewerLangPatches,
  viewerLangScript,
} from "../../src/export/viewer-lang.js";
import { type Gallery, startGallery } from "../core/harness.js";
import { ARTIFACTS } from "../web-dist.js";
import { addUpload, zipEntry, zipNames, zipTest } from "./fixtures.js";

/**
 * Memories.zip opens in the downloader's language (issue 14, item 8): the download names the
 * guest's UI language, the served archive's lang.js says it (CRCs still valid for unzip -t), and
 * the unzipped viewer opens in it in Chromium whatever the browser's own language is.
 */
describe("Memories viewer in the downloader's language", () => {
  let g: Gallery;
  let anna: { token: string; id: string };
  let ben: { token: string; id: string };
  let cleo: { token: string; id: string };

  beforeAll(async () => {
    g = await startGallery({ env: { GALLERY_TIMEZONE: "Europe/Berlin" } });
    const admin = await g.adminToken();
    anna = await g.join("Anna");
    ben = await g.join("Ben");
    cleo = await g.join("Cleo");
    await addUpload(g, anna.id, { caption: "Erster Tanz", hue: 30 });
    g.built.startWorkers();
    const ready = Promise.all(
      ["zip", "html"].map(
        (kind) =>
          new Promise<void>((resolve) => {
            const off = g.built.ctx.bus.subscribe((e, d) => {
              if (e === "export-ready" && d.kind === kind) {
                off();
                resolve();
              }
            });
          }),
      ),
    );
    expect((await g.call("POST", "/host/event/release", { token: admin })).statusCode).toBe(200);
    await ready;
  }, 60_000);
  afterAll(async () => {
    await g.close();
  });

  const download = async (token: string, query: string) => {
    const t = await g.call("POST", "/export/ticket", { token, body: { kind: "html" } });
    expect(t.statusCode, t.body).toBe(201);
    return g.call("GET", `/export/html/download?ticket=${encodeURIComponent(t.json().ticket)}${query}`);
  };
  const save = (body: Buffer, name: string) => {
    const file = join(g.dataDir, name);
    writeFileSync(file, body);
    return file;
  };

  it("serves lang.js in the requested language with valid checksums; without a language the browser decides", async () => {
    const de = await download(anna.token, "&lang=de");
    expect(de.statusCode).toBe(200);
    const deFile = save(de.rawPayload, "memories-de.zip");
    expect(zipTest(deFile)).toMatch(/No errors detected/);
    expect(zipNames(deFile)[0]).toBe("lang.js");
    expect(zipEntry(deFile, "lang.js").toString()).toBe('window.MEMORIES_LANG="de";\n');
    expect(Number(de.headers["content-length"])).toBe(de.rawPayload.length);

    const en = await download(anna.token, "&lang=en");
    const enFile = save(en.rawPayload, "memories-en.zip");
    expect(zipTest(enFile)).toMatch(/No errors detected/);
    expect(zipEntry(enFile, "lang.js").toString()).toBe('window.MEMORIES_LANG="en";\n');
    // Only the language and its checksums differ: the same size, the same index.html and media.
    expect(en.rawPayload.length).toBe(de.rawPayload.length);
    expect(zipEntry(enFile, "index.html").equals(zipEntry(deFile, "index.html"))).toBe(true);

    const plain = await download(ben.token, "");
    const plainFile = save(plain.rawPayload, "memories-plain.zip");
    expect(zipTest(plainFile)).toMatch(/No errors detected/);
    expect(zipEntry(plainFile, "lang.js").toString()).toBe('window.MEMORIES_LANG="--";\n');

    // An unknown language is refused before the ticket is spent.
    const t = await g.call("POST", "/export/ticket", { token: ben.token, body: { kind: "html" } });
    const bad = await g.call("GET", `/export/html/download?ticket=${t.json().ticket}&lang=fr`);
    expect(bad.statusCode).toBe(422);
    expect((await g.call("GET", `/export/html/download?ticket=${t.json().ticket}&lang=en`)).statusCode).toBe(
      200,
    );
  });

  it("the unzipped viewer opens in the downloader's language in a browser set to the other one", {
    timeout: 60_000,
  }, async () => {
    const browser = await launchChromium();
    try {
      for (const [lang, locale, title, other] of [
        ["de", "en-US", "Unser Event", "Our Event"],
        ["en", "de-DE", "Our Event", "Unser Event"],
      ] as const) {
        const res = await download(cleo.token, `&lang=${lang}`);
        const dir = join(g.dataDir, `unzipped-${lang}`);
        mkdirSync(dir, { recursive: true });
        execFileSync("unzip", ["-q", "-o", save(res.rawPayload, `m-${lang}.zip`), "-d", dir]);
        const ctx = await browser.newContext({ locale, viewport: { width: 390, height: 844 } });
        await ctx.setOffline(true);
        const page = await ctx.newPage();
        await page.goto(`file://${join(dir, "index.html")}`);
        expect(await page.getAttribute("html", "lang")).toBe(lang);
        expect(await page.locator("header h1").innerText()).toBe(title);
        expect(await page.locator("header h1").innerText()).not.toBe(other);
        await page.screenshot({ path: join(ARTIFACTS, `memories-downloaded-${lang}-in-${locale}.png`) });
        // The reader's own switch still wins, and is remembered.
        await page.click("#switch");
        await page.reload();
        expect(await page.getAttribute("html", "lang")).toBe(lang === "de" ? "en" : "de");
        await ctx.close();
      }
    } finally {
      await browser.close();
    }
  });

  it("an archive without a stored lang.js up front is served unchanged", async () => {
    const file = join(g.dataDir, "other.zip");
    execFileSync("zip", ["-q", "-j", file, join(g.dataDir, "memories-de.zip")]);
    const handle = await open(file, "r");
    try {
      expect(await viewerLangPatches(handle, (await handle.stat()).size, "de")).toBeNull();
    } finally {
      await handle.close();
    }
  });

  it("patches bytes that straddle chunk boundaries", async () => {
    const src = Buffer.from("0123456789abcdef");
    const chunks = [src.subarray(0, 3), src.subarray(3, 7), src.subarray(7)];
    const out: Buffer[] = [];
    const s = patchedStream(Readable.from(chunks), [
      { offset: 2, bytes: Buffer.from("XYZ") },
      { offset: 14, bytes: Buffer.from("!!") },
    ]);
    for await (const c of s) out.push(c as Buffer);
    expect(Buffer.concat(out).toString()).toBe("01XYZ56789abcd!!");
  });
});

describe("Memories language patch on a zip64 archive", () => {
  it("finds the central directory through the zip64 end record (archives past 4 GiB) and patches it", async () => {
    // A keepsake over 4 GiB puts its central directory behind a zip64 end record; yazl writes
    // one on request, so a small archive shows the same layout.
    const dir = mkdtempSync(join(tmpdir(), "viewer-lang-zip64-"));
    try {
      const zip = new yazl.ZipFile();
      zip.addReadStream(Readable.from([viewerLangScript(null)]), VIEWER_LANG_ENTRY, { compress: false });
      zip.addBuffer(Buffer.from("<!doctype html><title>Memories</title>"), "index.html");
      zip.end({ forceZip64Format: true, comment: "" });
      const stored = join(dir, "stored.zip");
      await pipeline(zip.outputStream, createWriteStream(stored));
      const bytes = readFileSync(stored);
      // The plain end record points at the zip64 one: central directory offset 0xffffffff.
      expect(bytes.readUInt32LE(bytes.length - 22 + 16)).toBe(0xffffffff);

      const handle = await open(stored, "r");
      try {
        const patches = await viewerLangPatches(handle, bytes.length, "de");
        expect(patches).not.toBeNull();
        const served = join(dir, "served.zip");
        await pipeline(
          patchedStream(handle.createReadStream({ start: 0 }), patches ?? []),
          createWriteStream(served),
        );
        expect(zipTest(served)).toContain("No errors detected");
        expect(zipEntry(served, VIEWER_LANG_ENTRY).toString()).toBe(viewerLangScript("de").toString());
      } finally {
        await handle.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
