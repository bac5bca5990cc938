import { timingSafeEqual } from "node:crypto";
import { describe, expect, it } from "vitest";
import { matchSecret, presentedCredentials, safeEqual } from "../src/http/auth.js";

describe("presentedCredentials", () => {
  it("reads all four header forms", () => {
    expect(presentedCredentials({ authorization: "Bearer abc" })).toEqual(["abc"]);
    expect(presentedCredentials({ authorization: "bearer   abc " })).toEqual(["abc"]);
    expect(presentedCredentials({ authorization: "abc" })).toEqual(["abc"]);
    expect(presentedCredentials({ "x-api-key": "k1" })).toEqual(["k1"]);
    expect(presentedCredentials({ "x-auth-token": "t1" })).toEqual(["t1"]);
    expect(
      presentedCredentials({ authorization: "Bearer a", "x-api-key": "b", "x-auth-token": "c" }),
    ).toEqual(["a", "b", "c"]);
    expect(presentedCredentials({})).toEqual([]);
    expect(presentedCredentials({ authorization: "  " })).toEqual([]);
  });
});

describe("matchSecret", () => {
  const accepted = ["first-secret", "second-secret", undefined];

  it("returns the index of the matching secret", () => {
    expect(matchSecret(["second-secret"], accepted)).toBe(1);
    expect(matchSecret(["first-secret"], accepted)).toBe(0);
    expect(matchSecret(["nope"], accepted)).toBe(-1);
    expect(matchSecret(["first-secret-and-more"], accepted)).toBe(-1);
  });

  it("never matches an unset or empty secret, even with nothing presented", () => {
    expect(matchSecret([], [undefined, ""])).toBe(-1);
    expect(matchSecret([""], [undefined, ""])).toBe(-1);
  });

  it("compares every (presented, accepted) pair whichever one matches", () => {
    for (const presented of [["first-secret"], ["second-secret"], ["nope"], ["nope", "first-secret"]]) {
      let calls = 0;
      matchSecret(presented, accepted, (a, b) => {
        calls += 1;
        return timingSafeEqual(a, b);
      });
      expect(calls).toBe(presented.length * accepted.length);
    }
  });

  it("safeEqual compares strings of any length", () => {
    expect(safeEqual("a", "a")).toBe(true);
    expect(safeEqual("a", "ab")).toBe(false);
  });
});
