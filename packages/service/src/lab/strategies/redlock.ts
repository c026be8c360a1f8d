import { RedlockClient } from 'lockstock';
import { RedisServer } from '@lockstock/servers';
import { lockSale } from './lock-sale.js';

/** Redlock needs independent masters: four more beside the lab's Redis, started once per lab. */
let extraMasters: Promise<RedisServer[]> | undefined;
const MASTERS = 5;

/** Seeds 003, 004: Redlock — SET NX PX on a majority of independent masters, validity = TTL − elapsed. */
export const redlock = lockSale({
  name: 'redlock',
  lockBackend: 'Redlock',
  title: 'Redlock on 5 independent masters (lockstock RedlockClient)',
  claim:
    'Redlock, the algorithm the Redis documentation describes and distributed-lock posts repeat: take the lock on a majority (N/2+1) of independent masters in less than its TTL; release everywhere on failure. A master failing does not lose the lock, unlike one master with a replica.',
  expectation: 'correct',
  note: 'Correct here; its safety still rests on bounded pauses and clock drift (Kleppmann vs antirez), and it has no fencing of its own: RedlockClient takes fencing tokens from an external source (PostgresTokenSource). Slower than one Redis: every acquire is a round trip to five masters, and contended waiters back off instead of being woken.',
  async prepareServers(env) {
    extraMasters ??= Promise.all(Array.from({ length: MASTERS - 1 }, () => RedisServer.start()));
    const urls = [env.redisUrl, ...(await extraMasters).map((m) => m.url)];
    return { masters: urls.join(' ') };
  },
  // One client per process and set of masters (workers serve many runs). A vote may take a second,
  // not the spec's 50 ms: the lab's masters share two loaded cores with every buyer process, and a
  // vote that times out is a refused acquire (an error in the run).
  client: (env, run) =>
    env.shared(
      `redlock ${String(run.options.masters)}`,
      () => new RedlockClient({ nodes: String(run.options.masters).split(' '), nodeTimeoutMs: 1_000 }),
      (client) => client.close(),
    ),
  async teardown() {
    const started = extraMasters;
    extraMasters = undefined;
    await Promise.all((await started?.catch(() => []))?.map((master) => master.stop()) ?? []);
  },
});
