import { type ChildProcess, execFile, spawn } from "node:child_process";
import { createReadStream } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { request as httpsRequest } from "node:https";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { launchChromium } from "@app/kit/testing/browser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nginxSiteConfig } from "./nginx-site.js";

// The three built services behind a real nginx (Debian's) terminating TLS with a self-signed
// certificate, configured as docs/deploy.md says: TRUST_PROXY=1 on the services (one proxy in front).
const run = promisify(execFile);
const root = fileURLToPath(new URL("../..", import.meta.url));
const NGINX = process.env.NGINX_PATH ?? "/usr/sbin/nginx";
const ADMIN = { username: "root", password: "proxy test admin pw" };
const UPLOAD_BYTES = 600_000_000;

interface Svc {
  proc: ChildProcess;
  url: string;
}
let dir: string;
let ca: Buffer;
const svcs: Record<string, Svc> = {};
const front: Record<string, number> = {};
let nginx: ChildProcess;

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

async function startService(name: string, env: Record<string, string>): Promise<Svc> {
  const { DATABASE_URL: _ignored, ...inherited } = process.env;
  const proc = spawn(process.execPath, [join(root, `services/${name}/dist/main.js`)], {
    env: { ...inherited, NODE_ENV: "production", HOST: "127.0.0.1", PORT: "0", TRUST_PROXY: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (b: Buffer) => {
      out += b.toString();
      const m = /"msg":"listening on (http:\/\/[^"]+)"/.exec(out);
      if (m) resolve(m[1] as string);
    };
    proc.stdout?.on("data", onData);
    proc.stderr?.on("data", onData);
    proc.on("exit", () => reject(new Error(`${name} exited:\n${out}`)));
  });
  return { proc, url };
}

/** One HTTPS request to nginx, from a chosen loopback address (a distinct "real client"). */
function call(
  service: string,
  path: string,
  opts: {
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer | Readable;
    from?: string;
  } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: "127.0.0.1",
        port: front[service],
        path,
        method: opts.method ?? "GET",
        headers: opts.headers ?? {},
        ca,
        servername: "localhost",
        localAddress: opts.from ?? "127.0.0.1",
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString(),
          }),
        );
      },
    );
    req.on("error", reject);
    const body = opts.body;
    if (body instanceof Readable) body.pipe(req);
    else req.end(body);
  });
}

const json = (body: unknown) => ({
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});

// Nothing here depends on the database backend: the PostgreSQL pass skips it.
const skip = process.env.TEST_BACKEND === "postgres";

beforeAll(async () => {
  if (skip) return;
  dir = await mkdtemp(join(tmpdir(), "proxy-test-"));
  await run("openssl", [
    ...["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost"],
    ...["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
    ...["-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")],
  ]);
  ca = await readFile(join(dir, "cert.pem"));
  const [gallery, platform, bridge] = await Promise.all([
    startService("event-gallery", { DATA_DIR: join(dir, "gallery"), GALLERY_ADMIN_PASSWORD: ADMIN.password }),
    startService("script-platform", {
      DATA_DIR: join(dir, "platform"),
      PLATFORM_ADMIN_USERNAME: ADMIN.username,
      PLATFORM_ADMIN_PASSWORD: ADMIN.password,
      PLATFORM_WORKERS: "1",
    }),
    startService("portal-bridge", { DATA_DIR: join(dir, "bridge"), KEEPALIVE_INTERVAL_MS: "0" }),
  ]);
  Object.assign(svcs, { gallery, platform, bridge });
  for (const name of ["gallery", "platform", "bridge"]) front[name] = await freePort();
  const prefix = join(dir, "nginx");
  await mkdir(join(prefix, "logs"), { recursive: true });
  const sites = (["gallery", "platform", "bridge"] as const)
    .map((name) =>
      nginxSiteConfig({
        name,
        listen: `127.0.0.1:${front[name]} ssl`,
        serverName: "localhost",
        upstream: (svcs[name] as Svc).url.replace(/^http:\/\//, ""),
        cert: join(dir, "cert.pem"),
        key: join(dir, "key.pem"),
      }),
    )
    .join("\n");
  // Workers run as the invoking user (no `user` switch): everything lives in this temp dir.
  await writeFile(
    join(prefix, "nginx.conf"),
    `worker_processes 1;
error_log stderr notice;
pid ${prefix}/nginx.pid;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${prefix}/client_body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
  types { text/html html; application/javascript js; text/css css; }
${sites}
}
`,
  );
  nginx = spawn(
    NGINX,
    ["-p", prefix, "-c", join(prefix, "nginx.conf"), "-e", "stderr", "-g", "daemon off;"],
    {
      stdio: ["ignore", "inherit", "pipe"],
    },
  );
  // Ready once the master started its worker (it has bound the ports by then).
  let log = "";
  await new Promise<void>((resolve, reject) => {
    nginx.stderr?.on("data", (b: Buffer) => {
      log += b.toString();
      if (log.includes("start worker process")) resolve();
    });
    nginx.on("exit", () => reject(new Error(`nginx exited:\n${log}`)));
  });
}, 120_000);

afterAll(async () => {
  nginx?.kill("SIGTERM");
  for (const s of Object.values(svcs)) s.proc.kill("SIGTERM");
  await Promise.all(
    [nginx, ...Object.values(svcs).map((s) => s.proc)].map(
      (p) => p && p.exitCode === null && new Promise((r) => p.once("exit", r)),
    ),
  );
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.skipIf(skip)("behind nginx with TLS and TRUST_PROXY", () => {
  it("the platform sees https and the public host: Secure cookie, /version's public URL", async () => {
    const login = await call("platform", "/api/v1/admin/login", { method: "POST", ...json(ADMIN) });
    expect(login.status).toBe(200);
    expect(String(login.headers["set-cookie"])).toMatch(/; Secure/);
    const v = JSON.parse((await call("platform", "/version")).text);
    // The client addressed 127.0.0.1:<port> (its Host header); nginx passed it on as X-Forwarded-Host.
    expect(v.public_base_url).toBe(`https://127.0.0.1:${front.platform}`);
  });

  it("limits count per real client: one client's failed logins do not lock out another", async () => {
    const attempt = (from: string, password: string) =>
      call("platform", "/api/v1/admin/login", {
        method: "POST",
        from,
        ...json({ username: ADMIN.username, password }),
      });
    for (let i = 0; i < 10; i++) expect((await attempt("127.0.0.2", "wrong")).status).toBe(401);
    expect((await attempt("127.0.0.2", ADMIN.password)).status).toBe(429);
    expect((await attempt("127.0.0.3", ADMIN.password)).status).toBe(200);
  });

  it("the gallery web app and the dashboard load with their assets", async () => {
    const browser = await launchChromium();
    try {
      const context = await browser.newContext({
        ignoreHTTPSErrors: true,
        viewport: { width: 390, height: 844 },
      });
      const failed: string[] = [];
      context.on("response", (r) => {
        // API calls may answer 401 before sign-in; pages and assets must all load.
        if (r.status() >= 400 && !new URL(r.url()).pathname.startsWith("/api/"))
          failed.push(`${r.status()} ${r.url()}`);
      });
      const page = await context.newPage();
      await page.goto(`https://localhost:${front.gallery}/`);
      await page.locator("input").first().waitFor();
      await page.goto(`https://localhost:${front.platform}/admin/`);
      await page.locator("input[type=password]").waitFor();
      expect(failed).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);

  it("SSE events arrive unbuffered, and a 600 MB upload passes the body limit", async () => {
    const joined = await call("gallery", "/api/v1/join", {
      method: "POST",
      ...json({ name: "Proxy Guest" }),
    });
    expect(joined.status).toBe(201);
    const token = JSON.parse(joined.text).token as string;
    const auth = { authorization: `Bearer ${token}` };
    const ticket = JSON.parse(
      (await call("gallery", "/api/v1/stream/ticket", { method: "POST", headers: auth })).text,
    ).ticket as string;

    // The stream: its first event must arrive while the connection stays open.
    const events: string[] = [];
    let onEvent = () => {};
    const sse = httpsRequest({
      host: "127.0.0.1",
      port: front.gallery,
      path: `/api/v1/stream?ticket=${encodeURIComponent(ticket)}`,
      ca,
      servername: "localhost",
    });
    sse.on("response", (res) => {
      res.on("data", (c: Buffer) => {
        for (const m of c.toString().matchAll(/^event: (\S+)$/gm)) events.push(m[1] as string);
        onEvent();
      });
    });
    sse.on("error", () => {});
    sse.end();

    // A short video padded to 600 MB (players and ffmpeg ignore what follows the file).
    const video = join(dir, "clip.mp4");
    await run("ffmpeg", [
      ...["-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=5", "-t", "1"],
      ...["-pix_fmt", "yuv420p", "-movflags", "+faststart", "-y", video],
    ]);
    const head = (await stat(video)).size;
    const create = await call("gallery", "/api/v1/uploads", {
      method: "POST",
      headers: {
        ...auth,
        "tus-resumable": "1.0.0",
        "upload-length": String(UPLOAD_BYTES),
        "upload-metadata": `client_upload_id ${Buffer.from("big-1").toString("base64")}`,
      },
    });
    expect(create.status).toBe(201);
    const location = String(create.headers.location);
    async function* body() {
      yield* createReadStream(video);
      const zeros = Buffer.alloc(1024 * 1024);
      for (let left = UPLOAD_BYTES - head; left > 0; left -= zeros.length)
        yield zeros.subarray(0, Math.min(left, zeros.length));
    }
    const patch = await call("gallery", location, {
      method: "PATCH",
      headers: {
        ...auth,
        "tus-resumable": "1.0.0",
        "upload-offset": "0",
        "content-type": "application/offset+octet-stream",
        "content-length": String(UPLOAD_BYTES),
      },
      body: Readable.from(body()),
    });
    expect(patch.status, patch.text).toBe(201);
    expect(patch.headers["upload-offset"]).toBe(String(UPLOAD_BYTES));

    // Buffered by the proxy, the event would wait for more bytes (or the 25 s heartbeat).
    await new Promise<void>((resolve, reject) => {
      const bound = setTimeout(
        () => reject(new Error("new-upload did not arrive through the proxy")),
        20_000,
      );
      onEvent = () => {
        if (events.includes("new-upload")) {
          clearTimeout(bound);
          resolve();
        }
      };
      onEvent();
    });
    sse.destroy();
  }, 240_000);
});
