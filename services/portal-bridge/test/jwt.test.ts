import { describe, expect, it } from "vitest";
import { signJwt } from "../src/testing/fake-portal.js";
import { cleanPaste, decodeClaims, MalformedTokenError } from "../src/token/jwt.js";
import { chooseStartupToken } from "../src/token/manager.js";

const token = (over: Record<string, unknown> = {}) =>
  signJwt({
    accountId: "acct-1",
    userId: "user-1",
    jti: "j1",
    iat: 1_800_000_000,
    exp: 1_802_592_000,
    ...over,
  });

describe("JWT claims and paste cleaning", () => {
  it("decodes exp, iat, userId, accountId and jti without verifying", () => {
    const t = token();
    expect(decodeClaims(t)).toEqual({
      exp: 1_802_592_000_000,
      iat: 1_800_000_000_000,
      userId: "user-1",
      accountId: "acct-1",
      jti: "j1",
    });
    // An unsigned token decodes too: the bridge cannot and does not verify signatures.
    const [h, p] = t.split(".");
    expect(decodeClaims(`${h}.${p}.`).userId).toBe("user-1");
  });

  it("refuses values that are not JWTs or lack the needed claims", () => {
    for (const bad of [
      "",
      "abc",
      "a.b",
      "a.b.c.d",
      "!!.??.xx",
      token({ exp: undefined }),
      token({ userId: undefined }),
    ])
      expect(() => decodeClaims(bad), bad).toThrow(MalformedTokenError);
  });

  it("cleans every pasted form to the bare value", () => {
    const t = token();
    const forms = [
      t,
      `  ${t}\n`,
      `jwt=${t}; Path=/`,
      `jwt=${t}; Path=/; Secure; HttpOnly`,
      `"${t}"`,
      `'jwt=${t}; Path=/'`,
      `${t.slice(0, 20)}\n${t.slice(20)}`,
      `connect.sid=s%3Aabc; jwt=${t}; SERVERID=x; isLoggedIn=true`,
      `Bearer ${t}`,
    ];
    for (const f of forms) expect(cleanPaste(f), f).toBe(t);
  });

  it("chooses between the saved and the environment token by seed rule 5", () => {
    const envT = token({ jti: "env", exp: 1_802_000_000 });
    const laterSaved = token({ jti: "saved", exp: 1_803_000_000 });
    const earlierSaved = token({ jti: "saved", exp: 1_801_000_000 });
    const otherAccount = token({ userId: "user-2", accountId: "acct-2", exp: 1_809_000_000 });
    expect(chooseStartupToken(envT, laterSaved)?.source).toBe("state");
    expect(chooseStartupToken(envT, earlierSaved)?.source).toBe("env");
    expect(chooseStartupToken(envT, otherAccount)?.source).toBe("env");
    expect(chooseStartupToken(undefined, laterSaved)?.source).toBe("state");
    expect(chooseStartupToken("garbage", laterSaved)?.source).toBe("state");
    expect(chooseStartupToken(envT, undefined)?.token).toBe(envT);
    expect(chooseStartupToken(undefined, undefined)).toBeNull();
  });
});
