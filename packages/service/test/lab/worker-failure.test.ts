import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LabOptions } from '../../src/lab/runner.js';
import { PostgresServer, RedisServer } from '@lockstock/servers';

/*
 * A lab worker that fails says why: the error the runner throws carries the worker's own error (sent
 * over IPC before it exits) or, when it died before it could, the end of its stderr. Before, both
 * read "lab worker exited with code 1" — on a loaded machine, two lab runs failed with only that.
 * The workers are made to fail by a module preloaded through NODE_OPTIONS (they inherit the env).
 */
const runnerPath = fileURLToPath(new URL('../../dist/lab/runner.js', import.meta.url));
const { runLab } = (await import(runnerPath)) as typeof import('../../src/lab/runner.js');
const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));

let redis: RedisServer;
let postgres: PostgresServer;
beforeAll(async () => {
  [redis, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
});
afterAll(async () => {
  await Promise.all([redis?.stop(), postgres?.stop()]);
});

/** A one-worker lab run whose worker preloads `preload`; resolves with what it threw. */
async function failingLab(preload: string): Promise<Error> {
  const before = process.env.NODE_OPTIONS;
  process.env.NODE_OPTIONS = `${before ?? ''} --require ${fixture(preload)}`.trim();
  try {
    const options: LabOptions = {
      strategies: ['redis-lua'],
      stock: 5,
      buyers: 10,
      processes: 1,
      concurrency: 2,
      runs: 1,
      redisUrl: redis.url,
      databaseUrl: postgres.url,
    };
    return await runLab(options).then(
      () => new Error('the lab run succeeded'),
      (error: unknown) => error as Error,
    );
  } finally {
    if (before === undefined) delete process.env.NODE_OPTIONS;
    else process.env.NODE_OPTIONS = before;
  }
}

describe('a lab worker that fails', () => {
  it('reports the error of its main(), sent before it exits', async () => {
    const error = await failingLab('lab-worker-bad-servers.cjs');
    expect(error.message).toMatch(/^lab worker failed: SyntaxError: .*JSON/);
    expect(error.message).toContain('at JSON.parse'); // its stack, to the line that failed
  });

  it('that dies before it can say so: the end of its stderr is in the error', async () => {
    const error = await failingLab('lab-worker-crashes.cjs');
    expect(error.message).toMatch(/^lab worker exited with code 1; its stderr ended with:\n/);
    expect(error.message).toContain('lab worker made to crash by test/fixtures/lab-worker-crashes.cjs');
  });
});
