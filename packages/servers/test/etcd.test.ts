import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EtcdCluster, EtcdServer, httpRequest } from '../src/index.js';

const b64 = (text: string) => Buffer.from(text).toString('base64');

/** A put through etcd's v3 JSON gateway (no etcd client library here). */
async function put(endpoint: string, key: string, value: string): Promise<void> {
  const answer = await httpRequest(`${endpoint}/v3/kv/put`, {
    method: 'POST',
    body: { key: b64(key), value: b64(value) },
  });
  expect(answer.status).toBe(200);
}

async function get(endpoint: string, key: string): Promise<string | undefined> {
  const answer = await httpRequest(`${endpoint}/v3/kv/range`, { method: 'POST', body: { key: b64(key) } });
  expect(answer.status).toBe(200);
  const { kvs } = JSON.parse(answer.body) as { kvs?: Array<{ value: string }> };
  return kvs?.[0] && Buffer.from(kvs[0].value, 'base64').toString();
}

describe('EtcdServer', () => {
  let etcd: EtcdServer;
  beforeAll(async () => {
    etcd = await EtcdServer.start();
  });
  afterAll(async () => {
    await etcd?.stop();
  });

  it('serves the v3 API on its loopback endpoint', async () => {
    expect(etcd.endpoint).toBe(`http://127.0.0.1:${etcd.port}`);
    expect(etcd.peerPort).not.toBe(etcd.port);
    expect(await etcd.healthy()).toBe(true);
    await put(etcd.endpoint, 'locks/a', 'one');
    expect(await get(etcd.endpoint, 'locks/a')).toBe('one');
  });

  it('pause() freezes it before it returns and resume() thaws it, every time', async () => {
    // kill(2) only queues SIGSTOP: before pause() waited for the stop, a loaded machine saw etcd
    // answer a request sent after it had returned. Run the race a number of times.
    for (let round = 0; round < 15; round++) {
      etcd.pause();
      await expect(httpRequest(`${etcd.endpoint}/health`, { timeoutMs: 200 })).rejects.toThrow(/no answer/);
      etcd.resume();
      expect(await etcd.healthy()).toBe(true);
    }
  });

  it('kill() crashes it; restart() brings it back on the same port with its data', async () => {
    const pid = etcd.pid;
    await etcd.kill();
    expect(etcd.running).toBe(false);
    await expect(httpRequest(`${etcd.endpoint}/health`)).rejects.toThrow(/ECONNREFUSED/);
    await etcd.restart();
    expect(etcd.pid).not.toBe(pid);
    expect(await get(etcd.endpoint, 'locks/a')).toBe('one');
  });

  it('stop() ends it even while paused and removes its temp dir', async () => {
    etcd.pause();
    await etcd.stop();
    expect(etcd.running).toBe(false);
    expect(existsSync(etcd.dir)).toBe(false);
  });
});

describe('EtcdCluster', () => {
  it('serves with one of 3 members stopped; the member restarts and catches up', async () => {
    const cluster = await EtcdCluster.start({ members: 3 });
    try {
      const [a, b, c] = cluster.members as [EtcdServer, EtcdServer, EtcdServer];
      expect(cluster.endpoints).toEqual([a.endpoint, b.endpoint, c.endpoint]);
      await put(a.endpoint, 'k1', 'before');
      await c.stop();
      await put(b.endpoint, 'k2', 'during');
      expect(await get(a.endpoint, 'k2')).toBe('during');
      await c.restart();
      expect(await get(c.endpoint, 'k1')).toBe('before');
      expect(await get(c.endpoint, 'k2')).toBe('during');
    } finally {
      await cluster.stop();
    }
    expect(existsSync(cluster.dir)).toBe(false);
  });
});
