import { createRequire } from 'node:module';
import type * as IORedis from 'ioredis';

/**
 * ioredis, loaded on first use. ioredis is an optional peer dependency: a team whose locks run on
 * ZooKeeper or etcd imports `lockstock` without having it installed, so nothing may load it before a
 * Redis lock client is made. It is CommonJS: `require` returns the very module object an ES import of
 * it yields, so the user's `Redis` and ours are one class.
 */
let loaded: typeof IORedis | undefined;

export function ioredis(): typeof IORedis {
  if (loaded === undefined) {
    try {
      loaded = createRequire(import.meta.url)('ioredis') as typeof IORedis;
    } catch (error) {
      throw new Error(
        "lockstock's Redis locks need the ioredis package, which is not installed: npm install ioredis",
        { cause: error },
      );
    }
  }
  return loaded;
}
