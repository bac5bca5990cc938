import { type Browser, chromium } from "playwright-core";

/**
 * Headless Debian Chromium for browser tests (never a downloaded browser). The flags keep it
 * from reaching the network on its own: this machine's closed network refuses those connections.
 */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** `extraArgs`: more Chromium flags (e.g. a fake microphone for MediaRecorder tests). */
export function launchChromium(extraArgs: readonly string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      ...extraArgs,
    ],
  });
}
