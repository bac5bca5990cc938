// Entry point of every process the harness forks (bench/harness/index.ts). Argv: mode
// ("server" | "task"), the module URL and the export to call. The parent talks over IPC:
//   server: parent sends {type:"start", args}; the export returns a ServerTarget; the child
//           answers {type:"ready", url, info}, then serves {type:"call"} and {type:"stop"}.
//   task:   parent sends {type:"start", args}; the export runs with (args, io) and the child
//           answers {type:"done", value, cpu} (its own CPU, from getrusage) and exits.
import type { ServerTarget, TaskIo } from "./types.js";

type Msg = { type: string; [k: string]: unknown };

const [mode, moduleUrl, exportName] = process.argv.slice(2);
if (!process.send || !mode || !moduleUrl || !exportName) {
  process.stderr.write("bench/harness/child: started without IPC or arguments\n");
  process.exit(2);
}
const send = (m: Msg) =>
  new Promise<void>((resolve) => {
    process.send?.(m, undefined, {}, () => resolve());
  });
const errorText = (err: unknown) => (err instanceof Error ? (err.stack ?? err.message) : String(err));

const inbox: Msg[] = [];
const waiters: ((m: Msg) => void)[] = [];
const io: TaskIo = {
  send: (message) => send({ type: "io", message }),
  next: () =>
    new Promise((resolve) => {
      const m = inbox.shift();
      if (m) resolve(m.message);
      else waiters.push((x) => resolve(x.message));
    }),
};

let target: ServerTarget | undefined;

process.on("message", async (m: Msg) => {
  try {
    if (m.type === "start") {
      const mod = (await import(moduleUrl)) as Record<string, (...a: unknown[]) => Promise<unknown>>;
      const fn = mod[exportName];
      if (typeof fn !== "function") throw new Error(`${moduleUrl} has no export ${exportName}`);
      if (mode === "server") {
        target = (await fn(m.args)) as ServerTarget;
        await send({ type: "ready", url: target.url, info: target.info ?? {} });
      } else {
        const value = await fn(m.args, io);
        await send({ type: "done", value, cpu: process.cpuUsage() });
        process.exit(0);
      }
    } else if (m.type === "io") {
      const w = waiters.shift();
      if (w) w(m);
      else inbox.push(m);
    } else if (m.type === "call") {
      const cmd = target?.commands?.[m.name as string];
      if (!cmd) throw new Error(`no command ${String(m.name)}`);
      try {
        await send({ type: "result", id: m.id, value: await cmd(m.arg) });
      } catch (err) {
        await send({ type: "result", id: m.id, error: errorText(err) });
      }
    } else if (m.type === "cpu") {
      await send({ type: "result", id: m.id, value: process.cpuUsage() });
    } else if (m.type === "stop") {
      await target?.close();
      process.exit(0);
    }
  } catch (err) {
    await send({ type: "failed", error: errorText(err) });
    process.exit(1);
  }
});
// The parent died: do not linger as an orphan holding a port or a database.
process.on("disconnect", () => process.exit(0));
