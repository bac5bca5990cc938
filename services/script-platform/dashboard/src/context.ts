import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { App, Page } from "./api.js";
import type { Resource } from "./ui.js";

export const AppsContext = createContext<Resource<Page<App>> | null>(null);

/** Every app (for the selector); pages that create, rename or delete apps call reload(). */
export function useApps(): Resource<Page<App>> {
  const apps = useContext(AppsContext);
  if (!apps) throw new Error("useApps outside the dashboard shell");
  return apps;
}
