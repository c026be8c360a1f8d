import { Redis } from 'ioredis';
import { RedisLockClient, type LockHandle, type ReplicaAcks } from 'lockstock';
import { RedisSentinelGroup } from '@lockstock/servers';
import type { LabEnv, LabRun, Strategy } from '../types.js';
import {
  inspectRedis,
  labKeys,
  prepareRedisStock,
  recordRedisOrder,
  redisReadCheckWrite,
} from './support.js';

/**
 * Seeds 003 and 004: a master with a replica loses a lock in a failover, because replication is
 * asynchronous. Each run gets its own Sentinel-managed master + replica. In the coordinator a holder
 * takes the lock while replication is cut, reads the stock, and stalls; the master dies, the Sentinel
 * promotes the replica — which never saw the lock — and the buyers take the lock there. The stalled
 * holder then writes what it computed before the failover, still believing it holds the lock.
 * (What replica acknowledgement changes is shown by the library's Sentinel test: the holder is
 * refused its lock while replication is cut — and, with the only replica promoted, so is everyone
 * after the failover until a new replica syncs: WAIT trades availability for the lock's survival.)
 */
interface RunState {
  group: RedisSentinelGroup;
  holder: RedisLockClient;
  connection: Redis;
  stale: Promise<void>;
}
const runs = new Map<string, RunState>();

const viaSentinel = (port: number, acks: ReplicaAcks | undefined) => {
  const connection = new Redis({
    sentinels: [{ host: '127.0.0.1', port }],
    name: 'lockstock',
    maxRetriesPerRequest: 100,
  });
  connection.on('error', () => undefined); // the killed master: ioredis asks the Sentinel again
  return {
    connection,
    locks: new RedisLockClient({ redis: connection, ...(acks ? { replicaAcks: acks } : {}) }),
  };
};

/** Per worker process: the client of the current run's Sentinel (the previous run's is closed). */
let current: { port: number; locks: RedisLockClient; connection: Redis } | undefined;
function workerLocks(port: number, acks: ReplicaAcks | undefined): RedisLockClient {
  if (current?.port !== port) {
    const previous = current;
    void previous?.locks.close().then(() => previous.connection.disconnect());
    current = { port, ...viaSentinel(port, acks) };
  }
  return current.locks;
}

function failoverStrategy(acks?: ReplicaAcks): Pick<Strategy, 'prepare' | 'buyer' | 'inspect'> {
  return {
    async prepare(env: LabEnv, run: LabRun) {
      await prepareRedisStock(env, run);
      const group = await RedisSentinelGroup.start();
      const { connection, locks: holder } = viaSentinel(group.sentinelPort, acks);
      // Replication is cut: the replica pauses and its link is dropped (its socket buffer would
      // otherwise still deliver the lock when it resumes).
      for (const replica of group.replicas) replica.signal('SIGSTOP');
      const admin = new Redis(group.master.url);
      await admin.client('KILL', 'TYPE', 'replica');
      admin.disconnect();
      const held: LockHandle | undefined = await holder
        .mutex(labKeys(run.runId).lock)
        .acquire({ waitMs: 2_000 })
        .catch(() => undefined); // refused without replica acknowledgement: nothing stale to write
      const read = Number(await env.redis.get(labKeys(run.runId).stock));
      const masterPort = group.master.port;
      const stale = (async () => {
        await group.master.kill();
        for (const replica of group.replicas) replica.signal('SIGCONT');
        await group.failedOver(masterPort);
        if (!held) return;
        // The holder resumes once the buyers have the lock on the new master (they have sold) and
        // finishes its section on what it read before: the pause that makes a lost lock matter.
        const key = labKeys(run.runId).stock;
        for (let i = 0; i < 1_000 && Number(await env.redis.get(key)) >= read; i++) {
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        if (read > 0) {
          await env.redis.set(labKeys(run.runId).stock, read - 1);
          await recordRedisOrder(env, run, 'holder-before-failover');
        }
      })();
      stale.catch(() => undefined);
      runs.set(run.runId, { group, holder, connection, stale });
      return { sentinel: group.sentinelPort };
    },
    async buyer(env, run) {
      const lock = workerLocks(Number(run.options.sentinel), acks).mutex(labKeys(run.runId).lock);
      return (buyer) => lock.run(() => redisReadCheckWrite(env, run, buyer), { waitMs: 30_000 });
    },
    async inspect(env, run) {
      const state = runs.get(run.runId);
      runs.delete(run.runId);
      if (state) {
        await state.stale;
        await state.holder.close();
        state.connection.disconnect();
        await state.group.stop();
      }
      return inspectRedis(env, run);
    },
  };
}

export const redisLockFailover: Strategy = {
  name: 'redis-lock-failover',
  title: 'lockstock mutex on a master with a replica, lock lost in a failover',
  claim:
    'Distributed-lock posts on Redis: master/replica replication is asynchronous; a lock written to the master but not yet replicated is lost when the replica is promoted, and a second client gets it while the first still holds it.',
  expectation: 'oversells',
  note: "The lock library is not at fault: the lock itself vanished with the master. Remedies: fencing at the resource (redis-lock-fenced), Redlock's independent masters, a consensus store, or replica acknowledgement (RedisLockClient replicaAcks: the lock is granted only once a replica has it — at the cost of refusing locks while no replica answers). lockstock's holder learns of the loss on its next renewal (the signal aborts), too late for a write already made.",
  ...failoverStrategy(),
};
