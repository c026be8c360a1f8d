import { chromium, type Browser } from 'playwright-core';
import { installDebianPackages, whichExecutable } from '@lockstock/servers';

/** Debian's chromium (never a browser download); installed like the servers when missing. */
export function findChromium(): string {
  const found = whichExecutable('chromium');
  if (found) return found;
  installDebianPackages('chromium', ['chromium']);
  const installed = whichExecutable('chromium');
  if (!installed) throw new Error('chromium is not on PATH after installing it');
  return installed;
}

/** Headless Chromium that stays off the network except for the pages the test opens. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: findChromium(),
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/**
 * Polls `probe` until `done` holds (bounded): the way these tests wait for a page or a pipeline,
 * never a fixed sleep. The error shows the last value seen.
 */
export async function until<T>(
  what: string,
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}; last seen ${JSON.stringify(value)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
