import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '@lockstock/servers';
import { spawnCli, waitUntilHealthy } from '../helpers/cli.js';
import { activeTestHooks, TEST_HOOKS, testHookWarnings } from '../../src/cli/test-hooks.js';

/**
 * Test hooks in production code (LOCKSTOCK_FAULT=false-sold-out makes `serve` answer sold out without
 * proof) must never act silently: each is listed in TEST_HOOKS, and a process started with one logs a
 * warning naming it.
 */
const src = fileURLToPath(new URL('../../src', import.meta.url));
/** The service's configuration variables: what a deployment sets, not a test. */
const CONFIGURATION = new Set([
  'LOCKSTOCK_BEACON_CHAIN',
  'LOCKSTOCK_BEACON_URL',
  'LOCKSTOCK_DEMO',
  'LOCKSTOCK_DURABILITY',
  'LOCKSTOCK_JWT_SECRET',
  'LOCKSTOCK_METRICS_HOST',
  'LOCKSTOCK_METRICS_PORT',
  'LOCKSTOCK_PROCESSES',
  'LOCKSTOCK_RATE_LIMIT_PER_IP',
  'LOCKSTOCK_RATE_LIMIT_PER_USER',
  // Set by serve --processes for the processes it starts (serve-primary.ts), not by a user.
  'LOCKSTOCK_SERVE_EMBEDDED',
  'LOCKSTOCK_SERVE_EMBEDDED_RECORD',
  'LOCKSTOCK_SERVE_REDIS_URL',
  'LOCKSTOCK_SERVE_ROLE',
  // Set by a process for the threads and processes it starts (cli/tracing.ts): one instance id.
  'LOCKSTOCK_SERVICE_INSTANCE_ID',
  'LOCKSTOCK_WAITLIST_OFFER_SECONDS',
]);

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.(ts|mjs|js)$/.test(entry) ? [path] : [];
  });
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('test hooks', () => {
  it('every LOCKSTOCK_ variable the sources read is a listed test hook or a configuration variable', () => {
    const named = new Set(
      sources(src).flatMap((file) => readFileSync(file, 'utf8').match(/LOCKSTOCK_[A-Z0-9_]+/g) ?? []),
    );
    const unlisted = [...named].filter((name) => !(name in TEST_HOOKS) && !CONFIGURATION.has(name));
    expect(unlisted).toEqual([]);
    // And every listed hook is still read somewhere (a stale list would hide a renamed one).
    expect(Object.keys(TEST_HOOKS).filter((hook) => !named.has(hook))).toEqual([]);
  });

  it('names each active hook, and none when none is set', () => {
    const env = { LOCKSTOCK_FAULT: 'false-sold-out', LOCKSTOCK_RECORD_VERDICTS: '', PATH: '/bin' };
    expect(activeTestHooks(env)).toEqual([{ hook: 'LOCKSTOCK_FAULT', value: 'false-sold-out' }]);
    expect(testHookWarnings(env)).toEqual([
      expect.stringMatching(/^test hook LOCKSTOCK_FAULT=false-sold-out is active/),
    ]);
    expect(testHookWarnings({ PATH: '/bin' })).toEqual([]);
  });

  it('serve started with LOCKSTOCK_FAULT=false-sold-out logs a warning naming the hook', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lockstock-hooks-'));
    dirs.push(dir);
    const port = await freePort();
    const serve = spawnCli(['serve', '--port', String(port), '--workers', '0', '--data-dir', dir], {
      LOCKSTOCK_FAULT: 'false-sold-out',
      LOG_FORMAT: 'json',
      REDIS_URL: undefined,
      DATABASE_URL: undefined,
    });
    try {
      // Said at start: by the time serve answers, the line is out.
      await waitUntilHealthy(`http://127.0.0.1:${port}/healthz`);
      const line = serve.allLines().find((printed) => printed.includes('LOCKSTOCK_FAULT'));
      expect(line, serve.output()).toBeDefined();
      expect(JSON.parse(line!)).toMatchObject({
        level: 40, // warn
        hook: 'LOCKSTOCK_FAULT',
        value: 'false-sold-out',
        msg: expect.stringMatching(/test hook LOCKSTOCK_FAULT=false-sold-out is active/) as string,
      });
    } finally {
      serve.kill();
      await serve.exited;
    }
  });
});
