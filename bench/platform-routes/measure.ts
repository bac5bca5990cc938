// Route table lookups: host → app → route, on a table of 10,000 routes (the per-app cap) spread
// over exact, param and prefix kinds and three host buckets: lookups per second and the time to
// rebuild the table from rows (what every route change costs each node). Run by run.ts through
// the harness, in a process of its own.
import { buildSnapshot, matchIn, parseHost, parsePath, type RouteView } from "@app/script-platform/bench";

export interface RouteFigures {
  buildMs: number;
  lookupsPerSec: number;
  usEach: number;
  hits: number;
  lookups: number;
}

export function measureRoutes(): RouteFigures {
  const APP = "app";
  const domains = [
    { app_id: APP, host: "example.com", kind: "exact" },
    { app_id: APP, host: "api.example.com", kind: "exact" },
    { app_id: APP, host: "*.example.com", kind: "wildcard" },
  ];
  const routes: RouteView[] = [];
  for (let i = 0; i < 10_000; i++) {
    const kind = i % 3;
    const path = kind === 0 ? `/r${i}/x` : kind === 1 ? `/r${i}/:id` : `/r${i}/*`;
    const hostKind = (["any", "strict", "wildcard"] as const)[i % 3 === 0 ? 0 : i % 2 === 0 ? 1 : 2];
    const host = hostKind === "strict" ? "api.example.com" : hostKind === "wildcard" ? "*.example.com" : null;
    const p = parsePath(path);
    routes.push({
      id: `r${i}`,
      app_id: APP,
      script_id: `s${i}`,
      host_kind: hostKind,
      host: parseHost(hostKind, host),
      path_kind: p.path_kind,
      path: p.path,
      method: i % 5 === 0 ? "ANY" : "GET",
      dispatch_mode: "sync",
      created_at: new Date(1_700_000_000_000 + i).toISOString(),
    });
  }

  let t0 = performance.now();
  const builds = 20;
  let snap = buildSnapshot(domains, routes);
  for (let i = 1; i < builds; i++) snap = buildSnapshot(domains, routes);
  const buildMs = (performance.now() - t0) / builds;

  const requests: [string, string][] = [];
  for (let i = 0; i < 1000; i++) {
    const n = (i * 7919) % 10_000;
    const host = ["example.com", "api.example.com", "a.b.example.com"][i % 3] as string;
    requests.push([host, n % 3 === 0 ? `/r${n}/x` : n % 3 === 1 ? `/r${n}/42` : `/r${n}/a/b`]);
  }
  const N = 200_000;
  let hits = 0;
  t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const [host, path] = requests[i % requests.length] as [string, string];
    if (matchIn(snap, host, "GET", path)) hits++;
  }
  const ms = performance.now() - t0;
  return { buildMs, lookupsPerSec: (N / ms) * 1000, usEach: (ms * 1000) / N, hits, lookups: N };
}
