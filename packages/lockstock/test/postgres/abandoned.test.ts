import { fork } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresServer } from '@lockstock/servers';
import { Contender, fixturePath } from '../helpers/processes.js';

/** An abandoned session hold (no lease to run out) is released: PostgreSQL shows its lock gone. */
let server: PostgresServer;
let pool: pg.Pool;
beforeAll(async () => {
  server = await PostgresServer.start();
  pool = new pg.Pool({ connectionString: server.url, max: 1 });
  pool.on('error', () => undefined); // the idle connection sees the server stop at the end
});
afterAll(async () => {
  await pool?.end();
  await server?.stop();
});

const advisoryLocks = async () => {
  const { rows } = await pool.query<{ n: string }>(
    "select count(*) as n from pg_locks where locktype = 'advisory' and granted",
  );
  return Number(rows[0]?.n);
};

describe('abandoned holds on PostgreSQL', () => {
  it('a session hold whose handle was collected is reported abandoned and released', async () => {
    const name = 'pg-abandoned-report';
    const args = JSON.stringify({ backend: { kind: 'postgres', url: server.url }, name, gcRounds: 200 });
    const holder = new Contender(
      fork(fixturePath('abandoned-holder.mjs'), [args], {
        execArgv: ['--expose-gc'],
        env: { ...process.env, LOCKSTOCK_ACQUIRE_STACKS: '1' },
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      }),
    );
    try {
      await holder.next('acquired');
      expect(await holder.next('gc-done')).toMatchObject({ collected: true });
      const lost = await holder.next('lost');
      expect(lost).toMatchObject({ name, reason: 'abandoned', label: 'nightly-report' });
      expect(lost.acquiredAt).toMatch(/leakNightlyReport/);
      // Released in the background after the report: only the clock lock stays (observed for up to
      // 20 s, generous for a release; without it the lock would stay for the session's life).
      for (let i = 0; i < 400 && (await advisoryLocks()) > 1; i++) await sleep(50);
      expect(await advisoryLocks()).toBe(1);
    } finally {
      holder.kill();
      await holder.exited;
    }
  }, 60_000);
});
