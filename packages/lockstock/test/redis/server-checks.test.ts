import { once } from 'node:events';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisServer } from '@lockstock/servers';
import {
  RedisLockClient,
  UnsafeServerError,
  type ServerFinding,
  type ServerWarningEvent,
} from '../../src/index.js';

/*
 * The checks of the server a Redis lock client writes to, against real redis-servers started in each
 * bad setting: an evicting policy under a memory limit (danger: strict clients refuse, warn clients
 * tell), no persistence and unacknowledged replicas (warnings), a replica (danger).
 */
const checks = (findings: readonly ServerFinding[], severity: ServerFinding['severity']) =>
  findings.filter((finding) => finding.severity === severity).map((finding) => finding.check);

describe('Redis server checks', () => {
  let master: RedisServer;
  let replica: RedisServer;
  let admin: Redis;
  const clients: RedisLockClient[] = [];
  const client = (url: string, options: Partial<ConstructorParameters<typeof RedisLockClient>[0]> = {}) => {
    const made = new RedisLockClient({ redis: url, ...options });
    clients.push(made);
    return made;
  };

  beforeAll(async () => {
    [master, replica] = await Promise.all([RedisServer.start(), RedisServer.start()]);
    admin = new Redis(master.url);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    admin.disconnect();
    await Promise.all([master?.stop(), replica?.stop()]);
  });

  it('a plain development server: its version, and a warning that a restart forgets locks', async () => {
    const report = await client(master.url).checkServer();
    expect(report.backend).toBe('redis');
    expect(checks(report.findings, 'info')).toContain('server-version');
    expect(report.findings.find((f) => f.check === 'server-version')?.message).toMatch(
      /^(Redis|Valkey) \d+\.\d+/,
    );
    expect(checks(report.findings, 'warning')).toEqual(['persistence']);
    expect(checks(report.findings, 'danger')).toEqual([]);
    // Nothing to refuse: a strict client takes its lock.
    const handle = await client(master.url, { serverChecks: 'strict' }).mutex('plain').acquire();
    await handle.release();
  });

  it('an evicting policy under a memory limit: strict refuses and writes nothing, warn tells', async () => {
    await admin.config('SET', 'maxmemory', '512mb');
    await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
    try {
      const report = await client(master.url).checkServer();
      expect(checks(report.findings, 'danger')).toEqual(['eviction-policy']);
      expect(report.findings.find((f) => f.check === 'eviction-policy')?.message).toMatch(/allkeys-lru/);

      const strict = client(master.url, { serverChecks: 'strict', keyPrefix: 'strict' });
      const refused = await strict
        .mutex('evicting')
        .acquire()
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(UnsafeServerError);
      expect((refused as UnsafeServerError).code).toBe('ERR_UNSAFE_SERVER');
      expect((refused as Error).message).toMatch(/maxmemory-policy is allkeys-lru/);
      // The refusal changed nothing in Redis: no key under the strict client's prefix.
      expect(await admin.keys('strict:*')).toEqual([]);
      // Refused again at once (the verdict stands until the recheck), without a new check.
      await expect(strict.mutex('evicting').tryAcquire()).rejects.toBeInstanceOf(UnsafeServerError);

      const warned = client(master.url);
      const warning = once(warned, 'serverWarning') as Promise<[ServerWarningEvent]>;
      const handle = await warned.mutex('evicting').acquire();
      await handle.release();
      const [event] = await warning;
      expect(event).toMatchObject({ backend: 'redis', check: 'eviction-policy', severity: 'danger' });

      // A danger nobody listens for becomes a process warning.
      const processWarning = once(process, 'warning') as Promise<[Error & { code?: string }]>;
      const unheard = await client(master.url).mutex('unheard').acquire();
      await unheard.release();
      const [emitted] = await processWarning;
      expect(emitted.name).toBe('LockstockServerWarning');
      expect(emitted.code).toBe('LOCKSTOCK_EVICTION_POLICY');

      // 'off' asks nothing and refuses nothing.
      const off = await client(master.url, { serverChecks: 'off' }).mutex('off').acquire();
      await off.release();
    } finally {
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      await admin.config('SET', 'maxmemory', '0');
    }
    // Without a memory limit the same policy evicts nothing yet: a warning, not a danger.
    await admin.config('SET', 'maxmemory-policy', 'volatile-lru');
    try {
      const report = await client(master.url).checkServer();
      expect(checks(report.findings, 'warning')).toContain('eviction-policy');
      expect(checks(report.findings, 'danger')).toEqual([]);
    } finally {
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
    }
  });

  it('with appendonly on, persistence is only reported', async () => {
    await admin.config('SET', 'appendonly', 'yes');
    try {
      const report = await client(master.url).checkServer();
      expect(checks(report.findings, 'warning')).not.toContain('persistence');
      expect(checks(report.findings, 'info')).toContain('persistence');
    } finally {
      await admin.config('SET', 'appendonly', 'no');
    }
  });

  it('a replica is a danger; a master with unacknowledged replicas a warning, unless replicaAcks', async () => {
    const replicaAdmin = new Redis(replica.url);
    try {
      await replicaAdmin.replicaof('127.0.0.1', master.port);
      // The master counts the replica once it has connected (INFO replication: connected_slaves).
      for (;;) {
        const info = await admin.info('replication');
        if (/connected_slaves:1/.test(info)) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const onReplica = await client(replica.url).checkServer();
      expect(checks(onReplica.findings, 'danger')).toEqual(['replication']);

      const onMaster = await client(master.url).checkServer();
      expect(checks(onMaster.findings, 'warning')).toContain('replication');
      const acked = await client(master.url, {
        replicaAcks: { replicas: 1, timeoutMs: 1_000 },
      }).checkServer();
      expect(checks(acked.findings, 'warning')).not.toContain('replication');
      const tooMany = await client(master.url, {
        replicaAcks: { replicas: 2, timeoutMs: 1_000 },
      }).checkServer();
      expect(tooMany.findings.find((f) => f.check === 'replication')?.message).toMatch(/asks for 2/);
    } finally {
      await replicaAdmin.replicaof('NO', 'ONE');
      replicaAdmin.disconnect();
    }
  });

  it('refuses an unknown serverChecks mode', () => {
    expect(() => client(master.url, { serverChecks: 'loud' as never })).toThrow(/serverChecks/);
  });
});
