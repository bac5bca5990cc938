import { stat } from "node:fs/promises";
import { newId } from "@app/kit/ids";
import type { BrandingService } from "../branding/service.js";
import type { GalleryContext } from "../context.js";
import type { ExportKind } from "../db/schema.js";
import { getEvent } from "../event/state.js";
import { keepsakeEntries } from "../guestbook/repository.js";
import { type ArchiveEntry, writeArchive } from "./archive.js";
import { extensionOf, folderNames, galleryEntryName, timeStamp } from "./entries.js";
import { mediaFile } from "./files.js";
import { GUESTBOOK_PAGE, type GuestbookPageEntry, renderGuestbookPage } from "./guestbook-page.js";
import { type MemoriesEvent, type MemoryItem, renderMemoriesHtml } from "./memories.js";
import {
  commentsOf,
  countArmedJobs,
  hashtagsOf,
  type JobRun,
  type SnapshotUpload,
  setProgress,
  visibleUploads,
} from "./repository.js";
import { VIEWER_LANG_ENTRY, viewerLangScript } from "./viewer-lang.js";

/** The build stopped because its epoch was superseded or the worker is stopping; not a failure. */
export class BuildAbandoned extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "BuildAbandoned";
  }
}

/** A failure whose message is safe to show hosts (no paths, no internals). */
export class BuildFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BuildFailure";
  }
}

export interface BuildHooks {
  /** Runs before each archive entry (tests use it to change state mid-build). */
  beforeEntry?: (kind: ExportKind, index: number) => Promise<void> | void;
}

/** Share of original bytes added for archive overhead and the temp file in the preflight. */
export const ESTIMATE_OVERHEAD = 0.1;

/** Preflight estimate: visible original bytes plus 10 %, for each armed job. */
export const keepsakeEstimate = (originalBytes: number, armedJobs: number) =>
  Math.ceil(originalBytes * (1 + ESTIMATE_OVERHEAD)) * armedJobs;

const GB = 1024 ** 3;
const gb = (n: number) => `${(n / GB).toFixed(1)} GB`;

const PROGRESS_STEP = 5;

export const ARCHIVE_NAMES: Record<ExportKind, string> = { zip: "Gallery.zip", html: "Memories.zip" };

export interface BuildRun extends JobRun {
  kind: ExportKind;
}

interface GuestbookArchive {
  /** The page and the voice recordings; none when the guestbook has no visible entry. */
  entries: ArchiveEntry[];
  count: number;
}

/** What a keepsake build needs of the gallery context, the cover photo, and the tests' hooks. */
export type KeepsakeBuilderDeps = Pick<
  GalleryContext,
  "config" | "clock" | "database" | "disk" | "settings" | "paths"
> & { branding: Pick<BrandingService, "storedCover">; hooks?: BuildHooks };

export type KeepsakeBuilder = ReturnType<typeof createKeepsakeBuilder>;

export function createKeepsakeBuilder(deps: KeepsakeBuilderDeps) {
  const hooks = deps.hooks ?? {};

  /**
   * The branding of the Memories viewer (issue 14): settings, the time zone of GALLERY_TIMEZONE and
   * the cover photo as an archive entry (`cover.jpg`) when there is one.
   */
  async function memoriesBranding(): Promise<{ event: MemoriesEvent; entries: ArchiveEntry[] }> {
    const [s, cover] = await Promise.all([deps.settings.all(), deps.branding.storedCover()]);
    const entries: ArchiveEntry[] = cover ? [{ name: "cover.jpg", file: cover.file, size: cover.size }] : [];
    return {
      event: {
        name: s.event_name,
        welcome_text_en: s.welcome_text_en,
        welcome_text_de: s.welcome_text_de,
        accent_color: s.accent_color,
        cover: entries.length > 0 ? "cover.jpg" : null,
        time_zone: deps.config.GALLERY_TIMEZONE,
      },
      entries,
    };
  }

  /**
   * Build one keepsake archive for a claimed run. Throws BuildAbandoned when superseded (or
   * stopping), BuildFailure with a host-facing message otherwise; on success the archive is durable
   * in the exports folder and the caller commits the row.
   */
  async function build(run: BuildRun, signal: AbortSignal): Promise<{ path: string; size: number }> {
    const { db } = deps.database;
    const uploads = await visibleUploads(db);

    const originalBytes = uploads.reduce((n, u) => n + u.original_size_bytes, 0);
    const armed = Math.max(1, await countArmedJobs(db, run.epoch));
    const estimate = keepsakeEstimate(originalBytes, armed);
    const { free_bytes } = await deps.disk.stat();
    if (estimate > free_bytes)
      throw new BuildFailure(
        `Not enough free disk space for the keepsake: it needs about ${gb(estimate)}, ${gb(free_bytes)} are free.`,
      );

    const guestbook = await guestbookArchive(run.kind);
    const entries =
      run.kind === "zip"
        ? [...(await galleryEntries(uploads)), ...guestbook.entries]
        : await memoriesEntries(uploads, guestbook);

    let lastPct = -1;
    let lastAt = 0;
    const fileName = `${run.kind}-e${run.epoch}-${newId()}.zip`;
    return writeArchive({
      dir: deps.paths.exportsDir,
      fileName,
      entries,
      signal,
      beforeEntry: async (index, doneBytes, totalBytes) => {
        if (signal.aborted) throw new BuildAbandoned("stopping");
        await hooks.beforeEntry?.(run.kind, index);
        const event = await getEvent(db);
        if (event.export_epoch !== run.epoch || !event.export_released_at)
          throw new BuildAbandoned("superseded");
        // 99 at most until the row commits as done.
        const pct = totalBytes > 0 ? Math.min(99, Math.floor((doneBytes * 100) / totalBytes)) : 0;
        // Every progress write is a committed (fsynced) row: write on a 5-point step, or once a second.
        const now = deps.clock.now();
        if (lastPct < 0 || pct - lastPct >= PROGRESS_STEP || (pct > lastPct && now - lastAt >= 1000)) {
          lastPct = pct;
          lastAt = now;
          if (!(await setProgress(db, run, pct, deps.clock.iso()))) throw new BuildAbandoned("superseded");
        }
      },
    }).catch((err) => {
      throw signal.aborted ? new BuildAbandoned("stopping") : err;
    });
  }

  async function fileEntry(rel: string): Promise<{ file: string; size: number }> {
    const file = mediaFile(deps.paths.mediaDir, rel);
    try {
      const s = await stat(file);
      return { file, size: s.size };
    } catch {
      throw new BuildFailure("A media file of a visible upload is missing on disk.");
    }
  }

  async function galleryEntries(uploads: SnapshotUpload[]): Promise<ArchiveEntry[]> {
    const folders = folderNames(uploads);
    const sorted = [...uploads].sort(
      (a, b) =>
        folders.get(a.user_id)!.localeCompare(folders.get(b.user_id)!) ||
        a.created_at.localeCompare(b.created_at) ||
        a.id.localeCompare(b.id),
    );
    const entries: ArchiveEntry[] = [];
    for (const u of sorted) {
      const f = await fileEntry(u.original_path);
      entries.push({
        name: galleryEntryName(folders.get(u.user_id)!, u),
        ...f,
        mtime: new Date(u.created_at),
      });
    }
    return entries;
  }

  /**
   * The guestbook part of a keepsake (issue 27): `guestbook.html` and the voice recordings under
   * `guestbook/`. A recording missing on disk leaves its entry's text (it was removed meanwhile).
   */
  async function guestbookArchive(kind: ExportKind): Promise<GuestbookArchive> {
    const rows = await keepsakeEntries(deps.database.db);
    if (rows.length === 0) return { entries: [], count: 0 };
    const files: ArchiveEntry[] = [];
    const page: GuestbookPageEntry[] = [];
    for (const r of rows) {
      let voice: string | null = null;
      if (r.voice_path) {
        const file = mediaFile(deps.paths.mediaDir, r.voice_path);
        const info = await stat(file).catch(() => null);
        if (info?.isFile()) {
          voice = `guestbook/${timeStamp(r.created_at)}_${r.id}.${extensionOf(r.voice_path, r.voice_mime ?? "")}`;
          files.push({ name: voice, file, size: info.size, mtime: new Date(r.created_at) });
        }
      }
      page.push({ author: r.display_name, text: r.text, created_at: r.created_at, voice });
    }
    const s = await deps.settings.all();
    const html = renderGuestbookPage(
      { name: s.event_name, accent_color: s.accent_color, time_zone: deps.config.GALLERY_TIMEZONE },
      page,
      { back: kind === "html" ? "index.html" : null, langScript: kind === "html" },
    );
    const mtime = new Date(deps.clock.now());
    return {
      entries: [{ name: GUESTBOOK_PAGE, buffer: Buffer.from(html, "utf8"), compress: true, mtime }, ...files],
      count: rows.length,
    };
  }

  async function memoriesEntries(
    uploads: SnapshotUpload[],
    guestbook: GuestbookArchive,
  ): Promise<ArchiveEntry[]> {
    const ids = uploads.map((u) => u.id);
    const [tags, comments] = await Promise.all([
      hashtagsOf(deps.database.db, ids),
      commentsOf(deps.database.db, ids),
    ]);
    const media: ArchiveEntry[] = [];
    const items: MemoryItem[] = [];
    for (const u of uploads) {
      // Videos have no display derivative: the viewer plays the original. An image whose display
      // derivative does not exist (yet) falls back to its original.
      const mainRel = u.media_type === "image" && u.display_path ? u.display_path : u.original_path;
      const mainName = `media/${u.id}.${extensionOf(mainRel, u.mime_type)}`;
      media.push({ name: mainName, ...(await fileEntry(mainRel)), mtime: new Date(u.created_at) });
      let still: string | null = null;
      if (u.thumbnail_path) {
        still = `thumbs/${u.id}.${extensionOf(u.thumbnail_path, "image/jpeg")}`;
        media.push({ name: still, ...(await fileEntry(u.thumbnail_path)), mtime: new Date(u.created_at) });
      }
      items.push({
        id: u.id,
        uploader: u.display_name,
        caption: u.caption,
        hashtags: tags.get(u.id) ?? [],
        media_type: u.media_type,
        created_at: u.created_at,
        media: mainName,
        still,
        comments: (comments.get(u.id) ?? []).map((c) => ({
          author: c.author,
          text: c.text,
          created_at: c.created_at,
        })),
      });
    }
    // Branding, languages and the time zone of the viewer (issue 14).
    const branding = await memoriesBranding();
    const html = Buffer.from(renderMemoriesHtml(branding.event, items, guestbook.count), "utf8");
    const mtime = new Date(deps.clock.now());
    return [
      // First and stored: a download patches it to the downloader's language (viewer-lang.ts).
      { name: VIEWER_LANG_ENTRY, buffer: viewerLangScript(null), compress: false, mtime },
      { name: "index.html", buffer: html, compress: true, mtime },
      ...branding.entries,
      ...guestbook.entries,
      ...media,
    ];
  }

  return { build };
}
