import { describe, expect, it } from "vitest";
import { SignalWatch } from "../../src/sandbox/signal-watch.js";

describe("SignalWatch", () => {
  it("listens once per signal however many items watch it, and hands the remaining items over on abort", () => {
    const aborted: string[][] = [];
    const w = new SignalWatch<string>((items) => aborted.push(items));
    const ac = new AbortController();
    let listeners = 0;
    const add = ac.signal.addEventListener.bind(ac.signal);
    ac.signal.addEventListener = ((...a: Parameters<typeof add>) => {
      listeners++;
      add(...a);
    }) as typeof add;
    for (const x of ["a", "b", "c"]) w.add(ac.signal, x);
    w.delete(ac.signal, "b");
    expect(listeners).toBe(1);
    ac.abort();
    expect(aborted).toEqual([["a", "c"]]);
    expect(w.signals).toBe(0);
  });

  it("stops listening once its last item left, and ignores items without a signal", () => {
    const w = new SignalWatch<number>(() => {
      throw new Error("not aborted while watched");
    });
    const ac = new AbortController();
    w.add(undefined, 1);
    w.add(ac.signal, 2);
    expect(w.signals).toBe(1);
    w.delete(ac.signal, 2);
    expect(w.signals).toBe(0);
    ac.abort();
  });
});
