import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

const serviceRoot = fileURLToPath(new URL("../..", import.meta.url));
const script = join(serviceRoot, "scripts/guardrail.mjs");
const run = (root?: string) =>
  spawnSync(process.execPath, root ? [script, root] : [script], { encoding: "utf8", timeout: 30_000 });

/** A copy of what the guardrail reads, to break on purpose. */
function fixture(): string {
  const dir = mkdtempSync(join(tmpdir(), "guardrail-"));
  cpSync(join(serviceRoot, "src/db/migrations"), join(dir, "src/db/migrations"), { recursive: true });
  cpSync(join(serviceRoot, "src/version.ts"), join(dir, "src/version.ts"));
  cpSync(join(serviceRoot, "package.json"), join(dir, "package.json"));
  dirs.push(dir);
  return dir;
}
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("versioning guardrail", () => {
  it("passes on this service", () => {
    const res = run();
    expect(res.stderr).toBe("");
    expect(res.status).toBe(0);
    expect(res.stdout).toMatch(/guardrail: ok \(\d+ migrations, sdk \d+\.\d+, product \d+\.\d+\.\d+\)/);
  });

  it("fails on a gap in the migration numbers", () => {
    const dir = fixture();
    const m = join(dir, "src/db/migrations");
    renameSync(join(m, "0002_data_plane.ts"), join(m, "0005_data_plane.ts"));
    const res = run(dir);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain("not sequential");
  });

  it("fails on a version that does not match the file name, or a badly named file", () => {
    const dir = fixture();
    const m = join(dir, "src/db/migrations");
    writeFileSync(join(m, "0099_Bad-Name.ts"), "export const migration = { version: 99 };");
    const res = run(dir);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain("is not named NNNN_snake_name.ts");
  });

  it("fails on an SDK version that is not MAJOR.MINOR and a package version that is not MAJOR.MINOR.PATCH", () => {
    const dir = fixture();
    writeFileSync(join(dir, "src/version.ts"), 'export const SDK_VERSION = "1.7.0";\n');
    writeFileSync(join(dir, "package.json"), JSON.stringify({ version: "1.1" }));
    const res = run(dir);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain("SDK version 1.7.0 is not MAJOR.MINOR");
    expect(res.stderr).toContain("package version 1.1 is not MAJOR.MINOR.PATCH");
  });
});
