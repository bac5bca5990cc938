import { useLayoutEffect, useState } from "preact/hooks";

/** A minimal observable value shared by components (no state library needed for this app). */
export interface Store<T> {
  value: T;
  set(v: T): void;
  subscribe(fn: (v: T) => void): () => void;
}

export function store<T>(initial: T): Store<T> {
  const subs = new Set<(v: T) => void>();
  const s: Store<T> = {
    value: initial,
    set(v) {
      s.value = v;
      for (const fn of subs) fn(v);
    },
    subscribe(fn) {
      subs.add(fn);
      return () => subs.delete(fn);
    },
  };
  return s;
}

/**
 * Re-render the calling component whenever the store changes. It subscribes as the render is
 * committed (not after paint), and a change that still came between render and subscription (a
 * fetch answering while the page paints) re-renders too: otherwise that change is never shown.
 */
export function useStore<T>(s: Store<T>): T {
  const [, bump] = useState(0);
  const rendered = s.value;
  useLayoutEffect(() => {
    const off = s.subscribe(() => bump((n) => n + 1));
    if (s.value !== rendered) bump((n) => n + 1);
    return off;
  }, [s]);
  return rendered;
}
