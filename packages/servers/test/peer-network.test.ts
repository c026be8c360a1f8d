import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EtcdCluster, httpRequest } from '../src/index.js';

const b64 = (text: string) => Buffer.from(text).toString('base64');

/** Whether a member's `/health` is true (it sees a leader); false when it does not answer in time. */
async function healthy(endpoint: string): Promise<boolean> {
  const answer = await httpRequest(`${endpoint}/health`, { timeoutMs: 2_000 }).catch(() => undefined);
  return answer?.status === 200 && (JSON.parse(answer.body) as { health?: string }).health === 'true';
}

// PeerNetwork on a real etcd cluster: the members' peer links go through its proxies, which tell the
// dialing member from the kernel's socket tables. Cutting one member off must leave the other two a
// working majority (their links still carried: were a dialer not recognised, its link would be cut
// too, and the majority would lose its quorum), and healing must bring the member back up to date.
describe('PeerNetwork', () => {
  let cluster: EtcdCluster;
  beforeAll(async () => {
    cluster = await EtcdCluster.start({ members: 3, partitionable: true });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('isolates one etcd member (no leader there, the majority writes on), then heals it', async () => {
    const [cut, a, b] = cluster.members as [
      (typeof cluster.members)[0],
      (typeof cluster.members)[0],
      (typeof cluster.members)[0],
    ];
    cluster.network!.isolate(cut.name);
    await expect.poll(() => healthy(cut.endpoint), { timeout: 30_000, interval: 200 }).toBe(false);
    // The majority may have to elect a leader first (if the cut member led).
    await expect.poll(() => healthy(a.endpoint), { timeout: 30_000, interval: 200 }).toBe(true);
    await expect.poll(() => healthy(b.endpoint), { timeout: 30_000, interval: 200 }).toBe(true);
    const put = await httpRequest(`${a.endpoint}/v3/kv/put`, {
      method: 'POST',
      body: { key: b64('k'), value: b64('written by the majority') },
    });
    expect(put.status).toBe(200);

    cluster.network!.heal();
    await expect.poll(() => healthy(cut.endpoint), { timeout: 30_000, interval: 200 }).toBe(true);
    const range = await httpRequest(`${cut.endpoint}/v3/kv/range`, {
      method: 'POST',
      body: { key: b64('k') },
    });
    const { kvs } = JSON.parse(range.body) as { kvs?: Array<{ value: string }> };
    expect(kvs && Buffer.from(kvs[0]!.value, 'base64').toString()).toBe('written by the majority');
  });
});
