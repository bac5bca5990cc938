import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";

/** The dashboard lives under /admin/; the server answers every /admin/* path with index.html. */
export const BASE = "/admin";

const listeners = new Set<() => void>();

function currentPath(): string {
  const p = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname;
  return p === "" ? "/" : p;
}

export function navigate(path: string, replace = false): void {
  const url = BASE + path;
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  for (const fn of listeners) fn();
  window.scrollTo(0, 0);
}

export function usePath(): string {
  const [path, setPath] = useState(currentPath);
  useEffect(() => {
    const update = () => setPath(currentPath());
    listeners.add(update);
    window.addEventListener("popstate", update);
    return () => {
      listeners.delete(update);
      window.removeEventListener("popstate", update);
    };
  }, []);
  return path;
}

/** Match `/apps/:app/scripts/:id` against a path; returns the named segments or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const ps = pattern.split("/").filter(Boolean);
  const xs = path.split("/").filter(Boolean);
  if (ps.length !== xs.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < ps.length; i++) {
    const p = ps[i]!;
    const x = xs[i]!;
    if (p.startsWith(":")) out[p.slice(1)] = decodeURIComponent(x);
    else if (p !== x) return null;
  }
  return out;
}

export function Link(props: { href: string; class?: string; children: ComponentChildren }) {
  return (
    <a
      href={BASE + props.href}
      class={props.class}
      onClick={(e) => {
        if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        navigate(props.href);
      }}
    >
      {props.children}
    </a>
  );
}
