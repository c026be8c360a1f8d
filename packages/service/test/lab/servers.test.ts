import { httpRequest } from '@lockstock/servers';
import { describe, expect, it } from 'vitest';
import { startLabServers } from '../../src/lab/servers.js';

/*
 * The lab starts the servers beyond Redis and PostgreSQL only for the strategies that name them, and
 * uses an address it is given instead of starting one.
 */
describe('the lab’s extra servers', () => {
  it('starts nothing when no strategy needs a server, or when it was given the address', async () => {
    const none = await startLabServers([]);
    expect(none.servers).toEqual({});
    await none.stop();
    const given = await startLabServers(['etcd', 'zookeeper'], {
      etcd: 'http://127.0.0.1:1',
      zookeeper: '127.0.0.1:1',
    });
    expect(given.servers).toEqual({ etcd: 'http://127.0.0.1:1', zookeeper: '127.0.0.1:1' });
    await given.stop();
  });

  it('starts one server per kind however many strategies need it, and stops it', async () => {
    const started = await startLabServers(['etcd', 'etcd'], { zookeeper: '127.0.0.1:1' });
    const endpoint = started.servers.etcd as string;
    expect(started.servers).toEqual({ etcd: endpoint, zookeeper: '127.0.0.1:1' });
    expect((await httpRequest(`${endpoint}/health`)).status).toBe(200);
    await started.stop();
    await expect(httpRequest(`${endpoint}/health`)).rejects.toThrow();
  });
});
