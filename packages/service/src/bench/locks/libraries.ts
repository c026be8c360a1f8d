import { Redis, type RedisOptions } from 'ioredis';
import { RedisLockClient } from 'lockstock';

/** The libraries compared; the peers are dev dependencies, loaded only when benchmarked. */
export const LIBRARIES = ['lockstock', 'redlock', 'redis-semaphore'] as const;
export type LibraryName = (typeof LIBRARIES)[number];

/** ioredis settings of a benchmark run; every library in a run gets the same ones. */
export type ClientSetting = 'default' | 'autoPipelining';

export interface HeldLock {
  release(): Promise<unknown>;
}

/** One library behind one interface: acquire (waiting as long as it takes), release, close. */
export interface LockAdapter {
  acquire(key: string): Promise<HeldLock>;
  close(): Promise<void>;
}

export function redisOptions(url: string, setting: ClientSetting): { url: string; options: RedisOptions } {
  return { url, options: setting === 'autoPipelining' ? { enableAutoPipelining: true } : {} };
}

async function importPeer<T>(name: string): Promise<T> {
  try {
    return (await import(name)) as T;
  } catch {
    throw new Error(
      `The lock benchmark compares against "${name}"; install it first: npm install --no-save ${name}`,
    );
  }
}

/** Fails with the install hint before anything starts if a peer library selected is missing. */
export async function assertPeersInstalled(libraries: readonly LibraryName[]): Promise<void> {
  for (const library of libraries) if (library !== 'lockstock') await importPeer(library);
}

/** A lock's lease in the benchmark, where a library needs one (peers' defaults are 10 s too). */
const LEASE_MS = 10_000;

export async function createAdapter(
  library: LibraryName,
  url: string,
  setting: ClientSetting,
): Promise<LockAdapter> {
  const { options } = redisOptions(url, setting);
  const redis = new Redis(url, options);
  await redis.ping();
  switch (library) {
    case 'lockstock': {
      // Defaults: watchdog lease, renewed in the background (like redis-semaphore's refresh).
      const locks = new RedisLockClient({ redis });
      return {
        acquire: (key) => locks.mutex(key).acquire(),
        close: async () => {
          await locks.close();
          redis.disconnect();
        },
      };
    }
    case 'redlock': {
      type RedlockModule = typeof import('redlock');
      const { default: Redlock, ExecutionError } = await importPeer<RedlockModule>('redlock');
      const redlock = new Redlock([redis]); // default retry settings (10 × 200 ms ± 200 ms)
      return {
        // redlock gives up after its retries; the benchmark loop keeps asking, like an app would.
        acquire: async (key) => {
          for (;;) {
            try {
              return await redlock.acquire([key], LEASE_MS);
            } catch (error) {
              if (!(error instanceof ExecutionError)) throw error;
            }
          }
        },
        close: async () => redis.disconnect(),
      };
    }
    case 'redis-semaphore': {
      type SemaphoreModule = typeof import('redis-semaphore');
      const { Mutex, TimeoutError } = await importPeer<SemaphoreModule>('redis-semaphore');
      return {
        // Defaults: 10 s lock refreshed in the background, 10 ms retry interval, 10 s acquire timeout.
        acquire: async (key) => {
          const mutex = new Mutex(redis, key);
          for (;;) {
            try {
              await mutex.acquire();
              return mutex;
            } catch (error) {
              if (!(error instanceof TimeoutError)) throw error;
            }
          }
        },
        close: async () => redis.disconnect(),
      };
    }
  }
}
