/**
 * Every page of the web app (its client-side routes), in one list for both sides: the server
 * answers each with index.html (a direct load, a reload, a bookmark), and the app's router and
 * links use only these (test/web/static.test.ts checks the app's sources against the list).
 */
export const APP_ROUTES = ["/", "/join", "/slideshow", "/host", "/host/card", "/admin"] as const;
export type AppRoute = (typeof APP_ROUTES)[number];
