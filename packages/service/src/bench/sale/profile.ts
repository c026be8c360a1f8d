/**
 * `bench sale --profile`: where a purchase's CPU goes, per request, in `serve --workers 0` and in the
 * minimal hand-written endpoint, side by side. Each server runs under `node --cpu-prof`; wrk warms it
 * up, then buys for the run's duration (distinct buyers, 64 connections); the server's samples taken
 * while wrk measured are summed by category (cpu-profile.ts) and divided by the requests wrk counted.
 * The servers take turns, first one then the other, for `rounds` rounds; the report gives medians.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TableData } from '../../support/table.js';
import { median } from '../stats.js';
import {
  CATEGORIES,
  cpuByCategory,
  monotonicUs,
  readMainThreadProfile,
  type Category,
} from './cpu-profile.js';
import { createSale, startLockstock, startMinimal, type BuyerTokens, type HttpLoad } from './http.js';
import { inRunOrder } from './order.js';
import { runWrk } from './wrk.js';

export interface ServerProfile {
  requestsPerSec: number;
  /** Busy CPU µs per request of the server's main thread, by category. */
  usPerRequest: Partial<Record<Category, number>>;
  busyUsPerRequest: number;
}

export interface PurchaseProfile {
  rounds: number;
  minimal: ServerProfile;
  lockstock: ServerProfile;
}

/** 200 µs between samples: ~5 per purchase at 1,000/s per core, fine enough over a 3 s window. */
const SAMPLING_US = 200;

async function profileOne(
  start: (nodeArgs: string[]) => Promise<{ url: string; stop(): Promise<void> }>,
  sales: (url: string) => Promise<[warm: string, open: string]>,
  tokens: BuyerTokens,
  load: HttpLoad,
): Promise<ServerProfile> {
  const dir = mkdtempSync(join(tmpdir(), 'lockstock-profile-'));
  try {
    const server = await start(['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-interval=${SAMPLING_US}`]);
    let window: [number, number];
    let requests: number;
    try {
      const [warm, open] = await sales(server.url);
      const wrk = (sale: string, range: 0 | 1, durationSeconds: number) => {
        const [firstToken, tokenCount] = tokens.range(range);
        return runWrk({
          ...load,
          url: `${server.url}/api/sales/${sale}/orders`,
          tokensFile: tokens.file,
          firstToken,
          tokenCount,
          durationSeconds,
        });
      };
      await wrk(warm, 0, 1);
      const from = monotonicUs();
      const measured = await wrk(open, 1, load.durationSeconds);
      window = [from, monotonicUs()];
      requests = measured.requests;
    } finally {
      await server.stop(); // the profile is written as the process exits
    }
    const totals = cpuByCategory(readMainThreadProfile(dir), ...window);
    const usPerRequest: Partial<Record<Category, number>> = {};
    for (const [category, us] of totals) usPerRequest[category] = us / requests;
    return {
      requestsPerSec: requests / ((window[1] - window[0]) / 1e6),
      usPerRequest,
      busyUsPerRequest: [...totals.values()].reduce((sum, us) => sum + us, 0) / requests,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function profilePurchases(
  redisUrl: string,
  databaseUrl: string,
  tokens: BuyerTokens,
  load: HttpLoad,
  rounds: number,
): Promise<PurchaseProfile> {
  const runs: Array<{ minimal: ServerProfile; lockstock: ServerProfile }> = [];
  for (let round = 0; round < rounds; round++) {
    const measure = {
      // The minimal endpoint seeds its open sale itself: its warm-up and measured buyers buy there
      // (different ranges of tokens).
      minimal: () => {
        let seeded: { open: string } | undefined;
        return profileOne(
          async (nodeArgs) => (seeded = await startMinimal(redisUrl, nodeArgs)),
          async () => [seeded?.open as string, seeded?.open as string],
          tokens,
          load,
        );
      },
      lockstock: () =>
        profileOne(
          (nodeArgs) => startLockstock('serve', redisUrl, databaseUrl, 1, nodeArgs),
          async (url) => [await createSale(url, 10_000_000), await createSale(url, 10_000_000)],
          tokens,
          load,
        ),
    };
    const run: Partial<Record<'minimal' | 'lockstock', ServerProfile>> = {};
    for (const name of inRunOrder(['minimal', 'lockstock'] as const, round))
      run[name] = await measure[name]();
    runs.push(run as { minimal: ServerProfile; lockstock: ServerProfile });
  }
  const summary = (name: 'minimal' | 'lockstock'): ServerProfile => {
    const usPerRequest: Partial<Record<Category, number>> = {};
    for (const category of CATEGORIES)
      usPerRequest[category] = median(runs.map((run) => run[name].usPerRequest[category] ?? 0));
    return {
      requestsPerSec: median(runs.map((run) => run[name].requestsPerSec)),
      usPerRequest,
      busyUsPerRequest: median(runs.map((run) => run[name].busyUsPerRequest)),
    };
  };
  return { rounds, minimal: summary('minimal'), lockstock: summary('lockstock') };
}

/** The side-by-side table: µs per request by category, then the totals. */
export function profileTable(profile: PurchaseProfile): TableData {
  const right = 'right' as const;
  const us = (value: number | undefined) => (value ?? 0).toFixed(1);
  return {
    columns: [
      { header: 'where a purchase’s CPU goes (server main thread)' },
      { header: 'minimal endpoint µs', align: right },
      { header: 'lockstock µs', align: right },
      { header: 'difference µs', align: right },
    ],
    rows: [
      ...CATEGORIES.map((category) => {
        const [a, b] = [profile.minimal.usPerRequest[category], profile.lockstock.usPerRequest[category]];
        return [category, us(a), us(b), us((b ?? 0) - (a ?? 0))];
      }),
      [
        'busy, per request',
        us(profile.minimal.busyUsPerRequest),
        us(profile.lockstock.busyUsPerRequest),
        us(profile.lockstock.busyUsPerRequest - profile.minimal.busyUsPerRequest),
      ],
      [
        'requests/s while profiled',
        Math.round(profile.minimal.requestsPerSec).toLocaleString('en-US'),
        Math.round(profile.lockstock.requestsPerSec).toLocaleString('en-US'),
        '',
      ],
    ],
  };
}
