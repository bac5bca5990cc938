import { statfs } from "node:fs/promises";
import type { DiskProbe } from "../context.js";

/** Free and total bytes of the filesystem that holds `dir`. */
export function createDiskProbe(dir: string): DiskProbe {
  return {
    async stat() {
      const s = await statfs(dir);
      return { free_bytes: s.bavail * s.bsize, total_bytes: s.blocks * s.bsize };
    },
  };
}
