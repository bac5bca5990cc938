// Starts the portal and timetable fakes on loopback for trying a built bridge by hand (a parent
// account with two children, rich-text tasks); prints the bridge's environment and stays up.
import { systemClock } from "@app/kit/clock";
import { createFakePortal } from "../../src/testing/fake-portal.js";
import { FakeTimetable, timetableEnv } from "./timetable.js";

const portal = createFakePortal({ clock: systemClock });
await portal.start();
const tt = new FakeTimetable(systemClock);
tt.account = "parent";
await tt.start();
const token = portal.login({ userId: "u1", accountId: "a1", firstName: "Grace", lastName: "Hopper" });
const env = { PORTAL_BASE_URL: portal.url, PORTAL_JWT_COOKIE: token, ...timetableEnv(tt.url) };
process.stdout.write(
  `${Object.entries(env)
    .map(([k, v]) => `${k}=${v}`)
    .join("\n")}\n`,
);
