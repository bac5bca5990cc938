import { describe, expect, it } from "vitest";
import { formatBanner } from "../src/banner.js";

describe("start-up banner", () => {
  it("is plain aligned text with the URL first", () => {
    const text = formatBanner({
      service: "svc",
      version: "1.2.3",
      url: "http://127.0.0.1:3001",
      rows: [
        ["Admin login", "http://127.0.0.1:3001/admin"],
        ["Password", "s3cret"],
      ],
    });
    const lines = text.trimEnd().split("\n");
    expect(lines.slice(1, -1)).toEqual([
      " svc 1.2.3 is running",
      "  URL:         http://127.0.0.1:3001",
      "  Admin login: http://127.0.0.1:3001/admin",
      "  Password:    s3cret",
    ]);
    expect(lines[0]).toMatch(/^-{20,}$/);
    expect(lines.at(-1)).toBe(lines[0]);
    expect(() => JSON.parse(text)).toThrow();
  });
});

describe("--version", () => {
  it("prints `<name> <version>` and starts nothing", async () => {
    const { runMain, packageVersion } = await import("../src/cli.js");
    const { vi } = await import("vitest");
    const out: string[] = [];
    const spy = vi.spyOn(process.stdout, "write").mockImplementation((s) => {
      out.push(String(s));
      return true;
    });
    let started = false;
    try {
      await runMain({
        title: "t",
        usage: "u",
        spec: {},
        argv: ["--version"],
        version: { name: "svc", version: packageVersion(new URL("../src/cli.ts", import.meta.url)) },
        start: async () => {
          started = true;
        },
      });
    } finally {
      spy.mockRestore();
    }
    expect(out).toEqual(["svc 0.1.0\n"]);
    expect(started).toBe(false);
  });
});
