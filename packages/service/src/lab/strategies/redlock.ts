import { RedlockClient } from 'lockstock';
import { RedisServer } from '@lockstock/servers';
import type { Strategy } from '../types.js';
import { inspectRedis, labKeys, prepareRedisStock, redisReadCheckWrite } from './support.js';

/** Redlock needs independent masters: four more beside the lab's Redis, started once per lab. */
let extraMasters: Promise<RedisServer[]> | undefined;
const MASTERS = 5;

/** One Redlock client per process and set of masters (workers serve many runs). */
const clients = new Map<string, RedlockClient>();
function redlockClient(urls: string[]): RedlockClient {
  const key = urls.join(',');
  let client = clients.get(key);
  // A vote may take a second, not the spec's 50 ms: the lab's masters share two loaded cores with
  // every buyer process, and a vote that times out is a refused acquire (an error in the run).
  if (!client) clients.set(key, (client = new RedlockClient({ nodes: urls, nodeTimeoutMs: 1_000 })));
  return client;
}

/** Seeds 003, 004: Redlock — SET NX PX on a majority of independent masters, validity = TTL − elapsed. */
export const redlock: Strategy = {
  name: 'redlock',
  title: 'Redlock on 5 independent masters (lockstock RedlockClient)',
  claim:
    'Seeds 003, 004: take the lock on a majority (N/2+1) of independent masters in less than its TTL; release everywhere on failure. A master failing does not lose the lock, unlike one master with a replica.',
  expectation: 'correct',
  note: 'Correct here; its safety still rests on bounded pauses and clock drift (Kleppmann vs antirez), and it has no fencing of its own: RedlockClient takes fencing tokens from an external source (PostgresTokenSource). Slower than one Redis: every acquire is a round trip to five masters, and contended waiters back off instead of being woken.',
  async prepare(env, run) {
    await prepareRedisStock(env, run);
    extraMasters ??= Promise.all(Array.from({ length: MASTERS - 1 }, () => RedisServer.start()));
    const urls = [env.redisUrl, ...(await extraMasters).map((m) => m.url)];
    return { masters: urls.join(' ') };
  },
  async buyer(env, run) {
    const lock = redlockClient(String(run.options.masters).split(' ')).mutex(labKeys(run.runId).lock);
    return (buyer) => lock.run(() => redisReadCheckWrite(env, run, buyer));
  },
  inspect: inspectRedis,
  async teardown() {
    const started = extraMasters;
    extraMasters = undefined;
    await Promise.all([...clients.values()].map((client) => client.close()));
    clients.clear();
    await Promise.all((await started?.catch(() => []))?.map((master) => master.stop()) ?? []);
  },
};
