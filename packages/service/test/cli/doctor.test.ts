import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, PostgresServer, RedisServer } from '@lockstock/servers';
import type { DoctorEntry } from '../../src/cli/doctor.js';
import { runCli } from '../helpers/cli.js';

/*
 * `lockstock doctor <url...>` against real servers: a sound one (exit 0), an evicting Redis (a danger:
 * exit 2), a warning that fails only --strict, one that cannot be asked and a URL it does not know
 * (exit 1), the JSON report, and no password printed.
 */
let redis: RedisServer;
let evicting: RedisServer;
let postgres: PostgresServer;

beforeAll(async () => {
  [redis, evicting, postgres] = await Promise.all([
    RedisServer.start({ args: ['--appendonly', 'yes'] }),
    RedisServer.start({ args: ['--maxmemory', '256mb', '--maxmemory-policy', 'allkeys-lru'] }),
    PostgresServer.start({ settings: { fsync: 'on', synchronous_commit: 'on' } }),
  ]);
});
afterAll(async () => {
  await Promise.all([redis?.stop(), evicting?.stop(), postgres?.stop()]);
});

describe('lockstock doctor', () => {
  it('sound servers: exit 0, each reported with its version', async () => {
    const { code, stdout } = await runCli(['doctor', redis.url, postgres.url]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/\(redis\)\n {2}info {5}server-version +(Redis|Valkey) \d/);
    expect(stdout).toMatch(/\(postgres\)\n {2}info {5}server-version +PostgreSQL \d/);
    expect(stdout.match(/nothing weakens the locks here/g)).toHaveLength(2);
  });

  it('an evicting Redis is a danger: exit 2, the finding and its fix, also as JSON', async () => {
    const { code, stdout } = await runCli(['doctor', evicting.url]);
    expect({ code, stdout }).toMatchObject({ code: 2 });
    expect(stdout).toMatch(/danger +eviction-policy +maxmemory-policy is allkeys-lru/);
    expect(stdout).toMatch(/fix: Set maxmemory-policy noeviction/);

    const json = await runCli(['doctor', '--json', '-', evicting.url]);
    expect(json.code).toBe(2);
    const [entry] = JSON.parse(json.stdout) as DoctorEntry[];
    expect(entry?.backend).toBe('redis');
    expect(entry?.findings.map((f) => `${f.severity}:${f.check}`)).toContain('danger:eviction-policy');
  });

  it('a warning fails only --strict', async () => {
    const admin = new Redis(redis.url);
    try {
      await admin.config('SET', 'appendonly', 'no');
      expect((await runCli(['doctor', redis.url])).code).toBe(0);
      const strict = await runCli(['doctor', '--strict', redis.url]);
      expect(strict.code).toBe(2);
      expect(strict.stdout).toMatch(/warning +persistence +appendonly is off/);
    } finally {
      await admin.config('SET', 'appendonly', 'yes');
      admin.disconnect();
    }
  });

  it('a server that cannot be asked, or a URL it does not know: exit 1, said per URL, no password shown', async () => {
    const port = await freePort();
    const { code, stdout } = await runCli([
      'doctor',
      '--timeout',
      '3000',
      `redis://user:s3cret@127.0.0.1:${port}`,
      'ftp://example.com',
      redis.url,
    ]);
    expect(code).toBe(1);
    expect(stdout).toMatch(/error +could not be asked/);
    expect(stdout).toMatch(/"ftp:\/\/example\.com\/" is not a server URL the doctor knows/);
    expect(stdout).not.toMatch(/s3cret/);
    // The servers that answered are still reported.
    expect(stdout).toMatch(/\(redis\)\n {2}info/);
  });
});
