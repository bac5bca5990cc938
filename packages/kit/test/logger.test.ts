import { describe, expect, it } from "vitest";
import { captureLogger } from "../src/logger.js";

describe("logger redaction", () => {
  it("redacts credential headers and token-like fields wherever they are logged", () => {
    const { logger, text } = captureLogger();
    logger.info(
      {
        req: {
          headers: {
            authorization: "Bearer AAA111",
            cookie: "jwt=BBB222",
            "x-api-key": "CCC333",
            "x-auth-token": "DDD444",
          },
        },
        token: "EEE555",
        user: { password: "FFF666", pin: "0420", name: "visible-name" },
      },
      "something happened",
    );
    const out = text();
    for (const s of ["AAA111", "BBB222", "CCC333", "DDD444", "EEE555", "FFF666", "0420"])
      expect(out).not.toContain(s);
    expect(out).toContain("visible-name");
    expect(out).toContain("[redacted]");
  });
});
