import { createRequire } from 'node:module';
import type * as IORedis from 'ioredis';

/**
 * ioredis, loaded on first use. ioredis is an optional peer dependency: a team whose locks run on
 * ZooKeeper or etcd imports `lockstock` without having it installed, so nothing may load it before a
 * Redis lock client is made. It is CommonJS: `require` returns the very module object an ES import of
 * it yields, so the user's `Redis` and ours are one class.
 */
let loaded: typeof IORedis | undefined;

const require = createRequire(import.meta.url);

export function ioredis(): typeof IORedis {
  if (loaded === undefined) {
    try {
      loaded = require('ioredis') as typeof IORedis;
    } catch (error) {
      throw new Error(
        "lockstock's Redis locks need the ioredis package, which is not installed: npm install ioredis",
        { cause: error },
      );
    }
  }
  return loaded;
}

/** ioredis when it is installed, else undefined (a team on node-redis or iovalkey has no ioredis). */
export function ioredisIfInstalled(): typeof IORedis | undefined {
  try {
    return ioredis();
  } catch {
    return undefined;
  }
}

/**
 * What the client makes its own connections with, from a URL or options: ioredis, or iovalkey (a
 * fork with ioredis' API and options) for a team that installed only iovalkey. node-redis is never
 * picked here: its options are not ioredis', and a URL alone cannot say which the caller meant.
 */
export function ioredisLike(): typeof IORedis {
  const own = ioredisIfInstalled();
  if (own !== undefined) return own;
  try {
    return require('iovalkey') as typeof IORedis;
  } catch {
    return ioredis(); // throws the message that names the package to install
  }
}

/**
 * Whether `client` is an iovalkey Cluster. iovalkey (0.4) forked ioredis before its Cluster learned to
 * route sharded pub/sub (ioredis' `shardedSubscribers`): an SSUBSCRIBE goes to any node and loops on
 * MOVED, so lock wake-ups could never arrive. Such a client is refused (connection.ts) rather than
 * left to wait out every lease.
 */
export function isIovalkeyCluster(client: object): boolean {
  try {
    const { Cluster } = require('iovalkey') as { Cluster: abstract new (...args: never[]) => object };
    return client instanceof Cluster;
  } catch {
    return false; // not installed: not one of its clients
  }
}
