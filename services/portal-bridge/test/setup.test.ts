import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeTimetable, timetableEnv } from "./fakes/timetable.js";
import { WebhookReceiver } from "./fakes/webhook.js";
import { AUTH, CONNECTOR, type Harness, startHarness } from "./helpers.js";

type Check = { id: string; state: string; message: string };

describe("/setup and /api/setup", () => {
  let h: Harness;
  let fake: FakeTimetable;
  const hook = new WebhookReceiver();
  const auth = { authorization: `Bearer ${AUTH}` };
  const checks = async (lang = "en") => {
    const res = await h.built.app.inject({ method: "GET", url: `/api/setup?lang=${lang}`, headers: auth });
    expect(res.statusCode).toBe(200);
    return Object.fromEntries((res.json() as { checks: Check[] }).checks.map((c) => [c.id, c]));
  };
  beforeAll(async () => {
    await hook.start();
    const { FakeClock } = await import("@app/kit/clock");
    const clock = new FakeClock("2026-11-23T07:00:00.000Z");
    fake = new FakeTimetable(clock);
    fake.account = "parent";
    await fake.start();
    h = await startHarness({
      clock,
      env: {
        ...timetableEnv(fake.url),
        MCP_CONNECTOR_TOKEN: CONNECTOR,
        ALERT_WEBHOOK_URL: hook.url,
        ALERT_WEBHOOK_FORMAT: "gotify",
        DIGEST_SCHEDULE: "Mon-Fri 06:45",
      },
    });
  });
  afterAll(async () => {
    await h.close();
    await fake.stop();
    await hook.stop();
  });

  it("checks each part live and says what works and what to fix", async () => {
    const c = await checks();
    expect(Object.keys(c)).toEqual(["portal_token", "timetable", "public_url", "alerts"]);
    expect(c.portal_token).toMatchObject({ state: "ok" });
    expect(c.portal_token?.message).toMatch(
      /^Works: account Ada Lovelace; expires Wed 2026-12-23 08:00 \(in 30 days\); idle budget 7200 s of 7200 s; keep-alive running\.$/,
    );
    expect(c.timetable).toMatchObject({ state: "ok" });
    expect(c.timetable?.message).toContain(
      "user Grace Hopper (LEGAL_GUARDIAN, Demo School); children: Anna, Ben",
    );
    expect(c.public_url).toMatchObject({ state: "warning" });
    expect(c.public_url?.message).toContain("set MCP_PUBLIC_URL");
    expect(c.alerts).toMatchObject({
      state: "ok",
      message: expect.stringContaining("format gotify); digest at Mon-Fri 06:45"),
    });
    const de = await checks("de");
    expect(de.portal_token?.message).toMatch(/^Funktioniert: Konto Ada Lovelace; läuft ab am/);
    // Nothing secret in any message.
    const all = JSON.stringify([c, de]);
    for (const s of [AUTH, h.token as string, "s3cret-topic", "JBSWY3DPEHPK3PXP"])
      expect(all).not.toContain(s);
  });

  it("names the clock skew from -8524 and a dead portal session, with what to do", async () => {
    fake.serverOffsetMs = -125_000; // the server is behind: this host is 125 s ahead
    const skew = await checks();
    expect(skew.timetable).toMatchObject({ state: "error" });
    expect(skew.timetable?.message).toContain(
      "(-8524): it is 125 s ahead of the server. Set the clock right",
    );
    fake.serverOffsetMs = 0;
    h.portal.logout(h.token as string);
    const dead = await checks();
    expect(dead.portal_token).toMatchObject({ state: "error" });
    expect(dead.portal_token?.message).toContain("The portal refused the token (401)");
    expect(dead.portal_token?.message).toContain("/token");
  });

  it("sends a test alert and reports what the receiver said", async () => {
    const ok = await h.built.app.inject({ method: "POST", url: "/api/setup/test-alert", headers: auth });
    expect(ok.json()).toEqual({ delivered: true, status: 200 });
    expect(hook.json().at(-1)).toMatchObject({
      title: "portal-bridge: test alert",
      priority: 5,
    });
    hook.status = 500;
    const bad = await h.built.app.inject({ method: "POST", url: "/api/setup/test-alert", headers: auth });
    expect(bad.json()).toEqual({ delivered: false, status: 500 });
    hook.status = 200;
    const connector = await h.built.app.inject({
      method: "POST",
      url: "/api/setup/test-alert",
      headers: { authorization: `Bearer ${CONNECTOR}` },
    });
    expect(connector.statusCode).toBe(403);
    const none = await h.built.app.inject({ method: "GET", url: "/api/setup" });
    expect(none.statusCode).toBe(401);
  });

  it("the page is behind the secret, in English and German; /token links to it", async () => {
    const login = await h.built.app.inject({
      method: "GET",
      url: "/setup",
      headers: { "accept-language": "de-DE,de;q=0.9" },
    });
    expect(login.statusCode).toBe(401);
    expect(login.body).toContain("Gemeinsames Geheimnis");
    expect(login.body).toContain('action="/setup"');
    const wrong = await h.built.app.inject({
      method: "POST",
      url: "/setup",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: "secret=nope",
    });
    expect(wrong.statusCode).toBe(401);
    const en = await h.built.app.inject({
      method: "POST",
      url: "/setup",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: `secret=${AUTH}`,
    });
    expect(en.statusCode).toBe(200);
    expect(en.headers["cache-control"]).toBe("no-store");
    expect(en.body).toContain("Set-up check");
    for (const name of [
      "Portal token",
      "Timetable (WebUntis)",
      "Public address for connectors",
      "Alerts and digest",
    ])
      expect(en.body).toContain(name);
    expect(en.body).toContain('id="test-alert"');
    const de = await h.built.app.inject({ method: "GET", url: "/setup?lang=de", headers: auth });
    expect(de.body).toContain('<html lang="de">');
    expect(de.body).toContain("Einrichtungs-Check");
    expect(de.body).toContain("funktioniert nicht");
    const token = await h.built.app.inject({ method: "GET", url: "/token", headers: auth });
    expect(token.body).toContain('action="/setup"');
  });
});
