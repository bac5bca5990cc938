/**
 * The acceptance check, end to end with real processes: a 200 MB video-sized file goes up
 * over tus (tus-js-client, as the web app uses it) while the gallery process is killed at ~30%,
 * stays down for 20 s, and is started again. No manual step: the client's own retries resume
 * from the server's offset. Prints what happened; exits non-zero on any mismatch.
 *
 *   npm run build && node --import tsx bench/gallery-ingest/outage.ts [MiB=200] [outage_s=20]
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Upload } from "tus-js-client";

const MIB = Number(process.argv[2] ?? 200);
const OUTAGE_S = Number(process.argv[3] ?? 20);
// The built server (the package export resolves to dist/).
const MAIN = fileURLToPath(import.meta.resolve("@app/event-gallery/main"));
const dataDir = mkdtempSync(join(tmpdir(), "gallery-outage-"));
const port = 20_000 + Math.floor(Math.random() * 20_000);
const base = `http://127.0.0.1:${port}`;
const t0 = Date.now();
const log = (msg: string) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)} s] ${msg}`);

function startServer(): Promise<ChildProcess> {
  const { DATABASE_URL: _unused, ...env } = process.env;
  const proc = spawn(process.execPath, [MAIN], {
    env: {
      ...env,
      DATA_DIR: dataDir,
      HOST: "127.0.0.1",
      PORT: String(port),
      GALLERY_ADMIN_PASSWORD: "outage check pw",
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  return new Promise((resolve, reject) => {
    const onData = (c: Buffer) => {
      out += c.toString();
      if (out.includes("listening on")) resolve(proc);
    };
    proc.stdout?.on("data", onData);
    proc.stderr?.on("data", onData);
    proc.on("exit", (code) => reject(new Error(`server exited ${code}: ${out.slice(-2000)}`)));
  });
}

// A real MP4 header so the bytes sniff as video/mp4, then incompressible filler.
const header = Buffer.from("000000206674797069736f6d0000020069736f6d69736f32617663316d703431", "hex");
const data = Buffer.concat([header, randomBytes(MIB * 1024 * 1024 - header.length)]);
const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

let server = await startServer();
log(`server up on ${base}; uploading ${MIB} MiB`);
const joined = (await (
  await fetch(`${base}/api/v1/join`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "Outage" }),
  })
).json()) as { token: string };

let killedAt = -1;
let restarted = false;
let lastAck = 0;
const result = await new Promise<{ id: string; status: number }>((resolve, reject) => {
  const upload = new Upload(data, {
    endpoint: `${base}/api/v1/uploads`,
    chunkSize: 8 * 1024 * 1024,
    // Enough patience for the outage: retries every few seconds for well over OUTAGE_S.
    retryDelays: Array.from({ length: 30 }, (_, i) => Math.min(5000, 500 * (i + 1))),
    metadata: { client_upload_id: "outage-1", filename: "party.mp4" },
    headers: { authorization: `Bearer ${joined.token}` },
    onChunkComplete(_size, accepted) {
      lastAck = accepted;
      if (killedAt < 0 && accepted >= data.length * 0.3) {
        killedAt = accepted;
        log(`acknowledged ${(accepted / 2 ** 20).toFixed(0)} MiB: kill -9 the server, ${OUTAGE_S} s outage`);
        server.kill("SIGKILL");
        setTimeout(() => {
          startServer().then((s) => {
            server = s;
            restarted = true;
            log("server restarted");
          }, reject);
        }, OUTAGE_S * 1000);
      }
    },
    onError: reject,
    onSuccess({ lastResponse }) {
      const body = JSON.parse(lastResponse.getBody() ?? "{}") as { upload?: { id: string } };
      resolve({ id: body.upload?.id ?? "", status: lastResponse.getStatus() });
    },
  });
  upload.start();
});
log(`finished: HTTP ${result.status}, upload ${result.id}, last acknowledged ${lastAck}`);

const originals = readdirSync(join(dataDir, "media", "originals"));
const partials = readdirSync(join(dataDir, "partials"));
const stored = readFileSync(
  join(dataDir, "media", "originals", originals.find((n) => !n.startsWith(".")) ?? ""),
);
const ok =
  restarted &&
  killedAt > 0 &&
  result.status === 201 &&
  sha(stored) === sha(data) &&
  originals.length === 1 &&
  partials.length === 0;
log(
  `restarted=${restarted} originals=${JSON.stringify(originals)} partials=${JSON.stringify(partials)} sha ${sha(stored) === sha(data) ? "matches" : "DIFFERS"}`,
);
server.kill("SIGTERM");
await new Promise((r) => server.once("exit", r));
rmSync(dataDir, { recursive: true, force: true });
log(ok ? "OK: survived the outage and the restart with no manual step" : "FAILED");
process.exit(ok ? 0 : 1);
