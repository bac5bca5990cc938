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
export function navigate(path: string): void {
  if (path !== location.pathname) history.pushState(null, "", path);
  route.set(path);
}
addEventListener("popstate", () => route.set(location.pathname));
