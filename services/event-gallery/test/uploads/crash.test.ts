import { type ChildProcess, spawn } from "node:child_process";
import { readdir, stat } from "node:fs/promises";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createTestEnv, type TestEnv } from "@app/kit/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_PASSWORD } from "../core/harness.js";
import { noiseJpeg } from "../media/helpers.js";
import { tusClient } from "./tus.js";

const MAIN = fileURLToPath(new URL("../../src/main.ts", import.meta.url));

interface Server {
  proc: ChildProcess;
  base: string;
  output: string;
}

/** The real gallery in a child process (so it can be killed with SIGKILL mid-upload). */
function startServer(env: TestEnv, idleS = 30): Promise<Server> {
  const { DATABASE_URL: _unused, ...inherited } = process.env;
  const proc = spawn(process.execPath, ["--conditions=source", "--import", "tsx", MAIN], {
    env: {
      ...inherited,
      ...(env.databaseUrl ? { DATABASE_URL: env.databaseUrl } : {}),
      DATA_DIR: env.dataDir,
      HOST: "127.0.0.1",
      PORT: "0",
      GALLERY_ADMIN_PASSWORD: ADMIN_PASSWORD,
      GALLERY_UPLOAD_IDLE_S: String(idleS),
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return new Promise((resolve, reject) => {
    const s: Server = { proc, base: "", output: "" };
    const timer = setTimeout(() => reject(new Error(`no start: ${s.output}`)), 60_000);
    const onData = (chunk: Buffer) => {
      s.output += chunk.toString();
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(s.output);
      if (m?.[1] && !s.base) {
        s.base = m[1];
        clearTimeout(timer);
        resolve(s);
      }
    };
    proc.stdout?.on("data", onData);
    proc.stderr?.on("data", onData);
    proc.on("exit", (code) => reject(new Error(`exited with ${code}: ${s.output}`)));
  });
}

async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 30_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const tmpFiles = async (dir: string) =>
  (await readdir(dir).catch(() => [] as string[])).filter((n) => n.startsWith(".tmp-"));

/** Start a multipart upload that sends `bytes` of its file and then holds the connection. */
function stalledUpload(base: string, token: string, file: Buffer, bytes: number): Socket {
  const url = new URL(base);
  const head = Buffer.from(
    '--XX\r\nContent-Disposition: form-data; name="file"; filename="a.jpg"\r\nContent-Type: image/jpeg\r\n\r\n',
  );
  const total = head.length + file.length + Buffer.byteLength("\r\n--XX--\r\n");
  const sock = connect(Number(url.port), url.hostname);
  sock.on("error", () => {});
  sock.write(
    `POST /api/v1/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: multipart/form-data; boundary=XX\r\nContent-Length: ${total}\r\n\r\n`,
  );
  sock.write(Buffer.concat([head, file.subarray(0, bytes)]));
  return sock;
}

describe("crash safety with a real process", () => {
  let env: TestEnv;
  let photo: Buffer;
  beforeAll(async () => {
    env = await createTestEnv("gallery_crash");
    photo = await noiseJpeg(1200, 900);
  });
  afterAll(async () => env.cleanup());

  it("sweeps the temp file a kill -9 left mid-upload within twice the idle limit of an immediate restart, and keeps tus partials resumable", async () => {
    let server = await startServer(env);
    const originals = join(env.dataDir, "media", "originals");
    let sock: Socket | null = null;
    try {
      const join1 = await fetch(`${server.base}/api/v1/join`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "Crashy" }),
      });
      const { token } = (await join1.json()) as { token: string };
      // A tus upload with some bytes stored.
      const tus = tusClient(server.base);
      const created = await tus.create(token, photo.length, { client_upload_id: "crash-1" });
      const loc = created.headers.get("location") as string;
      expect((await tus.patch(token, loc, 0, photo.subarray(0, 100_000))).status).toBe(204);
      // A plain upload in flight when the process dies.
      sock = stalledUpload(server.base, token, photo, 200_000);
      const [tmp] = await until("the temp file", async () => {
        const names = await tmpFiles(originals);
        if (names.length === 0) return null;
        return (await stat(join(originals, names[0] as string))).size > 0 ? names : null;
      });
      server.proc.kill("SIGKILL");
      await new Promise((r) => server.proc.once("exit", r));
      sock.destroy();
      // The dead process's file is still there: nobody else would ever remove it.
      expect(await tmpFiles(originals)).toEqual([tmp]);

      // Restarted at once (as a supervisor does), with a short idle limit so the test is quick:
      // the file is fresh, but its owner is dead.
      const IDLE_S = 2;
      server = await startServer(env, IDLE_S);
      const restartedAt = Date.now();
      await until(
        "the temp file to go",
        async () => (await tmpFiles(originals)).length === 0,
        2 * IDLE_S * 1000,
      );
      expect(Date.now() - restartedAt).toBeLessThanOrEqual(2 * IDLE_S * 1000);
      await until("the sweep log", async () => /"temp_files":1/.test(server.output));
      // The tus upload survived the crash and finishes from its stored offset.
      const again = tusClient(server.base);
      const head = await again.head(token, loc);
      expect(head.headers.get("upload-offset")).toBe("100000");
      const done = await again.patch(token, loc, 100_000, photo.subarray(100_000));
      expect(done.status).toBe(201);
      const admin = await fetch(`${server.base}/api/v1/admin/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ password: ADMIN_PASSWORD }),
      });
      const disk = await fetch(`${server.base}/api/v1/admin/disk`, {
        headers: { authorization: `Bearer ${((await admin.json()) as { token: string }).token}` },
      });
      // Only the one real upload counts.
      expect(((await disk.json()) as { originals_bytes: number }).originals_bytes).toBe(photo.length);
    } finally {
      sock?.destroy();
      // Wait for the child to exit, so it is not still writing into DATA_DIR (or holding the
      // database) while afterAll removes them.
      if (server.proc.exitCode === null && server.proc.signalCode === null) {
        const exited = new Promise((r) => server.proc.once("exit", r));
        server.proc.kill("SIGTERM");
        const hard = setTimeout(() => server.proc.kill("SIGKILL"), 15_000);
        await exited;
        clearTimeout(hard);
      }
    }
  }, 120_000);
});
