import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, PostgresServer, RedisServer } from '@lockstock/servers';
import { spawnCli, waitUntilHealthy, type CliProcess } from '../helpers/cli.js';
import { until } from '../helpers/until.js';
import { signToken } from '../../src/http/auth.js';

const SECRET = 'serve-health-secret-0123456789';

/**
 * `serve` records orders in its order thread; /healthz runs on the HTTP thread and must still see
 * that thread's pipeline fail (it used to report `ok` with no consumer while PostgreSQL was down).
 */
let redis: RedisServer;
let postgres: PostgresServer;
let serve: CliProcess;
let url: string;

beforeAll(async () => {
  [redis, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  serve = spawnCli(
    ['serve', '--port', String(port), '--workers', '1', '--redis', redis.url, '--database', postgres.url],
    { LOCKSTOCK_JWT_SECRET: SECRET },
  );
  await waitUntilHealthy(`${url}/healthz`);
});

afterAll(async () => {
  serve?.kill();
  await serve?.exited;
  await Promise.all([redis?.stop(), postgres?.stop()]);
});

interface Health {
  status: string;
  pipeline: string;
  backlog: { consumers: number };
}
const health = async () => (await (await fetch(`${url}/healthz`)).json()) as Health;

describe('serve /healthz with the pipeline in the order thread', () => {
  it("counts the order thread's consumer and reports it retrying while PostgreSQL is down, ok once it is back", async () => {
    await until(
      'the order thread reports its pipeline',
      async () => (await health()).backlog.consumers === 1,
    );
    expect(await health()).toMatchObject({ status: 'ok', pipeline: 'ok' });
    const created = await fetch(`${url}/api/sales`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${signToken(SECRET, 'admin', { admin: true })}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ name: 'health', stock: 5 }),
    });
    const { id } = (await created.json()) as { id: string };
    await postgres.stopImmediately();
    // A purchase needs only Redis; recording it is what fails.
    const bought = await fetch(`${url}/api/sales/${id}/orders`, {
      method: 'POST',
      headers: { authorization: `Bearer ${signToken(SECRET, 'buyer')}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(bought.status).toBe(202);
    await until('the pipeline reported retrying', async () => (await health()).pipeline === 'retrying');
    expect((await health()).status).toBe('degraded');
    await postgres.restart();
    await until('the pipeline ok again', async () => (await health()).pipeline === 'ok', 20_000);
  });
});
