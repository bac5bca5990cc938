import { randomBytes } from "node:crypto";
import { mkdir, readdir, rm, stat, utimes, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";

/**
 * Who owns a temp file (issue 27). Every app instance has an owner id; its temp files are named
 * `.tmp-<owner>-<random>`, and it keeps a marker file `<DATA_DIR>/temp-owners/<owner>` whose
 * modification time it sets to its clock every quarter of GALLERY_UPLOAD_IDLE_S. A marker not
 * renewed for a whole GALLERY_UPLOAD_IDLE_S (or missing) means its owner is dead (killed, crashed)
 * and its temp files can go; a live owner's files are never touched, whatever their age, whichever
 * process sweeps. No process ids are involved, so containers and hosts sharing a folder (with
 * clocks in step) cannot mistake one another.
 */
export const OWNERS_DIR = "temp-owners";
const NAME = /^\.tmp-([0-9a-f]{12})-[0-9a-f]{16}$/;

export const newOwnerId = () => randomBytes(6).toString("hex");

/** A temp file name in the folder of `finalPath` (the rename stays on one filesystem). */
export const ownedTempPath = (finalPath: string, owner: string) =>
  join(dirname(finalPath), `.tmp-${owner}-${randomBytes(8).toString("hex")}`);

/** The owner of a temp file name, or null for a name without one (written before owners). */
export const ownerOfTemp = (name: string): string | null => NAME.exec(name)?.[1] ?? null;

const markerPath = (dataDir: string, owner: string) => join(dataDir, OWNERS_DIR, owner);

/** Creates or renews the owner's marker, dated `nowMs`. */
export async function renewOwner(dataDir: string, owner: string, nowMs: number): Promise<void> {
  const path = markerPath(dataDir, owner);
  const at = new Date(nowMs);
  try {
    await utimes(path, at, at);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, "");
    await utimes(path, at, at);
  }
}

/** `force`: a marker already gone is fine. */
export const releaseOwner = (dataDir: string, owner: string) =>
  rm(markerPath(dataDir, owner), { force: true });

/**
 * The owners whose markers are older than `deadBeforeMs`, plus `isDead` for any owner id (a
 * missing marker is dead). Read once per sweep.
 */
export async function ownerLiveness(dataDir: string, deadBeforeMs: number) {
  const live = new Set<string>();
  const dead: string[] = [];
  const folder = join(dataDir, OWNERS_DIR);
  const names = await readdir(folder).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return [] as string[];
    throw err;
  });
  for (const name of names) {
    const st = await stat(join(folder, name)).catch(() => null);
    if (st && st.mtimeMs >= deadBeforeMs) live.add(name);
    else dead.push(name);
  }
  return {
    isDead: (owner: string) => !live.has(owner),
    /** Markers of dead owners, removed once their files are gone. */
    forget: async () => {
      for (const name of dead) await rm(join(folder, name), { force: true });
      return dead.length;
    },
  };
}
