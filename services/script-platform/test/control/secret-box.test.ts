import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createSecretBox, loadMasterKey } from "../../src/crypto/secret-box.js";

const dirs: string[] = [];
const freshDir = () => {
  const d = mkdtempSync(join(tmpdir(), "sbox-"));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("secret box and master key", () => {
  it("generates the key once into DATA_DIR (mode 0600) and reuses it after a restart", () => {
    const dir = freshDir();
    const first = loadMasterKey(undefined, dir);
    expect(first.generated).toBe(true);
    expect(statSync(join(dir, "secret.key")).mode & 0o777).toBe(0o600);
    const sealed = createSecretBox(first.key).seal("value", "aad");
    const second = loadMasterKey(undefined, dir);
    expect(second.generated).toBe(false);
    expect(createSecretBox(second.key).openString(sealed, "aad")).toBe("value");
  });

  it("uses PLATFORM_SECRET_KEY when set, and a different key cannot open the value", () => {
    const dir = freshDir();
    const configured = loadMasterKey("11".repeat(32), dir);
    expect(configured.generated).toBe(false);
    expect(configured.key.toString("hex")).toBe("11".repeat(32));
    const sealed = createSecretBox(configured.key).seal(new Uint8Array([1, 2, 3]));
    expect([...createSecretBox(configured.key).open(sealed)]).toEqual([1, 2, 3]);
    expect(() => createSecretBox(Buffer.alloc(32, 2)).open(sealed)).toThrow(/failed authentication/);
  });

  it("uses a fresh IV per value and detects tampering", () => {
    const box = createSecretBox(Buffer.alloc(32, 7));
    const a = box.seal("same");
    const b = box.seal("same");
    expect(a).not.toBe(b);
    const raw = Buffer.from(a.slice(3), "base64url");
    raw[raw.length - 1] = (raw[raw.length - 1] as number) ^ 1;
    expect(() => box.open(`v1.${raw.toString("base64url")}`)).toThrow(/failed authentication/);
    expect(() => box.open("v0.abc")).toThrow(/format/);
  });
});
