import { execFileSync, spawnSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// docs/monitoring: the alert rules and scrape config are valid for promtool, the dashboard is
// JSON, and every metric they name is one a service exports.
const root = fileURLToPath(new URL("../../../", import.meta.url));
const dir = join(root, "docs/monitoring");
const hasPromtool = spawnSync("promtool", ["--version"]).status === 0;

/** Metric names created in the kit and the services (`name: "…"`, pool counters, build_info). */
function exportedNames(): Set<string> {
  const names = new Set<string>(["gallery_build_info", "platform_build_info", "bridge_build_info"]);
  const visit = (d: string) => {
    for (const e of readdirSync(d)) {
      const p = join(d, e);
      if (statSync(p).isDirectory()) visit(p);
      else if (p.endsWith(".ts"))
        for (const m of readFileSync(p, "utf8").matchAll(/(?:name: |poolCounter\(\s*)"([a-z_]+)"/g))
          names.add(m[1] as string);
    }
  };
  visit(join(root, "packages/kit/src/http"));
  for (const s of ["event-gallery", "script-platform", "portal-bridge"])
    visit(join(root, "services", s, "src"));
  return names;
}

describe("docs/monitoring", () => {
  it.runIf(hasPromtool)("passes promtool check rules and check config", () => {
    const out = execFileSync("promtool", ["check", "config", join(dir, "prometheus.yml")], {
      encoding: "utf8",
    });
    expect(out).toMatch(/SUCCESS: \d+ rules found/);
    execFileSync("promtool", ["check", "rules", join(dir, "alerts.yml")]);
  });

  it("names only metrics the services export; covers the alerts the operators asked for", () => {
    const rules = readFileSync(join(dir, "alerts.yml"), "utf8");
    const dashboard = JSON.parse(readFileSync(join(dir, "grafana-dashboard.json"), "utf8")) as {
      panels: { targets: { expr: string }[] }[];
    };
    const exprs = [rules, ...dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr))].join("\n");
    const exported = exportedNames();
    const used = new Set(
      [...exprs.matchAll(/\b((?:gallery|platform|bridge|http|process|db|nodejs)_[a-z_]+)/g)].map((m) =>
        (m[1] as string).replace(/_(bucket|sum|count)$/, ""),
      ),
    );
    expect([...used].filter((n) => !exported.has(n))).toEqual([]);
    for (const alert of [
      "BridgeKeepaliveStopped",
      "BridgeTokenExpiring",
      "GalleryDerivativeBacklogGrowing",
      "PlatformOutboxDepth",
      "PlatformDeadLetters",
      "HighServerErrorRate",
      "ServiceNotReady",
    ])
      expect(rules).toContain(`alert: ${alert}`);
  });
});
