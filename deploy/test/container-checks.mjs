// What the container test (deploy/test/container.sh) checks through the published ports:
//   node container-checks.mjs first  STATE_FILE   a guest joins, uploads a photo and sees its
//                                                  thumbnail; a platform admin logs in and a hello
//                                                  route answers; the bridge lists its tools; then
//                                                  one last acknowledged write before the stop
//   node container-checks.mjs again  STATE_FILE   after stop and a second up on the same volumes:
//                                                  the same data, including that last write
// Ports and secrets come from the environment the test exported for compose.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";

const [phase, stateFile] = process.argv.slice(2);
const env = process.env;
const base = {
  gallery: `http://127.0.0.1:${env.GALLERY_PORT}`,
  platform: `http://127.0.0.1:${env.PLATFORM_PORT}`,
  bridge: `http://127.0.0.1:${env.BRIDGE_PORT}`,
};

function fail(msg) {
  console.error(`container check failed: ${msg}`);
  process.exit(1);
}

/** node:http so that the Host header can be set (fetch will not send one): the platform routes by host. */
function http(url, { method = "GET", headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        const buf = Buffer.concat(chunks);
        resolve({ status: res.statusCode, headers: res.headers, buf, text: buf.toString() });
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}
const json = (o) => ({ headers: { "content-type": "application/json" }, body: JSON.stringify(o) });
async function ok(label, p, status = [200, 201, 204]) {
  const r = await p;
  if (!status.includes(r.status)) fail(`${label}: ${r.status} ${r.text.slice(0, 300)}`);
  return r;
}

/** Wait for a condition the service reaches on its own (derivatives run in the background). */
async function until(label, fn, ms = 60_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) fail(`${label}: not reached within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function thumbnailOf(token, uploadId) {
  const auth = { authorization: `Bearer ${token}` };
  const feed = JSON.parse((await ok("feed", http(`${base.gallery}/api/v1/feed`, { headers: auth }))).text);
  const item = feed.items.find((i) => i.id === uploadId);
  if (!item) fail("the upload is not in the feed");
  if (!item.thumbnail_url) return null;
  const t = await ok("thumbnail", http(`${base.gallery}${item.thumbnail_url}`, { headers: auth }));
  return t.buf.length > 0 && /^image\//.test(String(t.headers["content-type"])) ? item : null;
}

const adminHeaders = async () => {
  const r = await ok(
    "platform admin login",
    http(`${base.platform}/api/v1/admin/login`, {
      method: "POST",
      ...json({ username: env.PLATFORM_ADMIN_USERNAME, password: env.PLATFORM_ADMIN_PASSWORD }),
    }),
  );
  return { authorization: `Bearer ${JSON.parse(r.text).token}`, "content-type": "application/json" };
};
const hello = async () =>
  JSON.parse(
    (await ok("hello route", http(`${base.platform}/hello`, { headers: { host: "hello.test" } }))).text,
  );

async function mcpTools() {
  const headers = {
    authorization: `Bearer ${env.MCP_AUTH_TOKEN}`,
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    host: "localhost",
  };
  const init = await ok(
    "mcp initialize",
    http(`${base.bridge}/mcp`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-03-26",
          capabilities: {},
          clientInfo: { name: "container-test", version: "1" },
        },
      }),
    }),
  );
  const session = init.headers["mcp-session-id"];
  const h = { ...headers, ...(session ? { "mcp-session-id": session } : {}) };
  await http(`${base.bridge}/mcp`, {
    method: "POST",
    headers: h,
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
  });
  const list = await ok(
    "mcp tools/list",
    http(`${base.bridge}/mcp`, {
      method: "POST",
      headers: h,
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
    }),
  );
  const payload = list.text.includes("data:")
    ? list.text
        .split("\n")
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5))
        .join("")
    : list.text;
  return JSON.parse(payload).result.tools.map((t) => t.name);
}

if (phase === "first") {
  // Gallery: a guest joins and uploads a photo; its thumbnail appears.
  const joined = JSON.parse(
    (
      await ok(
        "join",
        http(`${base.gallery}/api/v1/join`, { method: "POST", ...json({ name: "Container Guest" }) }),
      )
    ).text,
  );
  const photo = execFileSync("ffmpeg", [
    ...["-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=640x480", "-frames:v", "1"],
    ...["-f", "image2", "-c:v", "mjpeg", "-"],
  ]);
  const boundary = "----container-test";
  const form = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="caption"\r\n\r\nfrom the container test\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="photo.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
    ),
    photo,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const up = await ok(
    "upload",
    http(`${base.gallery}/api/v1/upload`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${joined.token}`,
        "content-type": `multipart/form-data; boundary=${boundary}`,
      },
      body: form,
    }),
  );
  const uploadId = JSON.parse(up.text).upload.id;
  await until("thumbnail", () => thumbnailOf(joined.token, uploadId));

  // Platform: admin login, an app with a domain, a hello script on a route.
  const admin = await adminHeaders();
  const post = async (path, body) =>
    JSON.parse(
      (
        await ok(
          path,
          http(`${base.platform}${path}`, { method: "POST", headers: admin, body: JSON.stringify(body) }),
        )
      ).text,
    );
  const app = await post("/api/v1/admin/apps", { slug: "hello" });
  await post(`/api/v1/admin/apps/${app.id}/domains`, { host: "hello.test" });
  const script = await post("/api/v1/admin/scripts", {
    app_id: app.id,
    name: "hello",
    kind: "endpoint",
    source: `export default function () { return { hello: "container" }; }`,
  });
  await post(`/api/v1/admin/scripts/${script.id}/routes`, {
    path: "/hello",
    method: "GET",
    host_kind: "any",
  });
  if ((await until("hello route", async () => (await hello()).hello)) !== "container")
    fail("hello answered wrongly");

  // Bridge: its tools through MCP with the shared secret.
  const tools = await mcpTools();
  if (tools.length === 0) fail("the bridge lists no tools");

  // The last write before the stop: acknowledged (201) means it must survive it.
  const comment = JSON.parse(
    (
      await ok(
        "comment",
        http(`${base.gallery}/api/v1/upload/${uploadId}/comments`, {
          method: "POST",
          headers: { authorization: `Bearer ${joined.token}`, "content-type": "application/json" },
          body: JSON.stringify({ text: "written just before the stop" }),
        }),
      )
    ).text,
  );
  writeFileSync(
    stateFile,
    JSON.stringify({ token: joined.token, uploadId, commentId: comment.comment?.id ?? comment.id, tools }),
  );
  console.log(
    `first: guest upload ${uploadId} with thumbnail, hello route, ${tools.length} bridge tools, comment written`,
  );
} else if (phase === "again") {
  const s = JSON.parse(readFileSync(stateFile, "utf8"));
  await until("thumbnail after restart", () => thumbnailOf(s.token, s.uploadId), 20_000);
  const comments = await ok(
    "comments",
    http(`${base.gallery}/api/v1/upload/${s.uploadId}/comments`, {
      headers: { authorization: `Bearer ${s.token}` },
    }),
  );
  if (!comments.text.includes("written just before the stop")) fail("the last acknowledged comment is gone");
  await adminHeaders();
  if ((await hello()).hello !== "container") fail("the hello route is gone");
  const tools = await mcpTools();
  if (tools.join() !== s.tools.join()) fail("the bridge's tools changed");
  console.log("again: same upload, thumbnail, comment, admin, hello route and tools after the restart");
} else {
  fail("usage: container-checks.mjs first|again STATE_FILE");
}
