// CPU profile of a target process's main thread (node:inspector), as bench commands:
// `profileStart`, then `profileStop` with the file to write (open it in Chrome DevTools).
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";

export function profileCommands() {
  let session: Session | null = null;
  return {
    profileStart: async () => {
      session = new Session();
      session.connect();
      await session.post("Profiler.enable");
      await session.post("Profiler.setSamplingInterval", { interval: 200 });
      await session.post("Profiler.start");
      return null;
    },
    profileStop: async (file: unknown) => {
      if (!session) return null;
      const { profile } = await session.post("Profiler.stop");
      writeFileSync(String(file), JSON.stringify(profile));
      session.disconnect();
      session = null;
      return null;
    },
  };
}
