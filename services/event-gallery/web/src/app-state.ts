import type { AppRoute } from "../../src/http/app-routes.js";
import { api, type Me, session } from "./api.js";
import { store } from "./store.js";

/** Who is signed in and the event state, refreshed on demand and on live events. */
export const me = store<Me | null>(null);

export async function refreshMe(): Promise<Me | null> {
  if (!session.token()) {
    me.set(null);
    return null;
  }
  try {
    const m = await api<Me>("GET", "/me/context");
    me.set(m);
    return m;
  } catch (e) {
    if ((e as { status?: number }).status === 401) {
      session.clear();
      me.set(null);
      return null;
    }
    throw e;
  }
}

/** Client-side navigation between the app's pages. */
export const route = store(location.pathname);
/** Only the app's declared pages (APP_ROUTES: the server answers each on a direct load). */
export function navigate(path: AppRoute): void {
  if (path !== location.pathname) history.pushState(null, "", path);
  route.set(path);
}
addEventListener("popstate", () => route.set(location.pathname));
