import { PostgresServer, RedisServer } from '@lockstock/servers';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { PostgresFencedStore, PostgresTokenSource, RedlockClient } from '../../src/index.js';
import { FaultProxy } from './fault-proxy.js';

/** A Redlock client whose link to each master goes through its own fault proxy (`links[i]`: master i). */
export interface LinkedRedlock {
  readonly client: RedlockClient;
  readonly links: readonly FaultProxy[];
}

export interface RedlockLabOptions {
  /** Extra `redis-server` arguments per master (by index), e.g. AOF for one of them. */
  args?: (index: number) => string[];
  /** Masters the lab does not start (the caller starts them its own way, e.g. under a shim). */
  custom?: Record<number, () => Promise<{ url: string; stop(): Promise<void> }>>;
}

/**
 * Redlock fault rows' bench: a private PostgreSQL for the file (fencing tokens from a sequence, and
 * the fenced resource), and per test five fresh masters, clients connected directly or through one
 * fault proxy per master (Kleppmann's schedules need "client 1 cannot reach D and E"), and raw
 * connections to look at what each master holds.
 */
export function useRedlockLab() {
  const state = {} as { postgres: PostgresServer; pool: pg.Pool; store: PostgresFencedStore<string> };
  beforeAll(async () => {
    state.postgres = await PostgresServer.start();
    state.pool = new pg.Pool({ connectionString: state.postgres.url, max: 6 });
    state.pool.on('error', () => undefined); // idle connections see the server stop at the end
    state.store = new PostgresFencedStore<string>(state.pool);
    await state.store.migrate();
  });
  afterAll(async () => {
    await state.pool?.end();
    await state.postgres?.stop();
  });
  return {
    get store() {
      return state.store;
    },
    get pool() {
      return state.pool;
    },
    start: (options: RedlockLabOptions = {}) => RedlockLab.start(state.pool, options),
  };
}

export class RedlockLab {
  private readonly clients: LinkedRedlock[] = [];
  private readonly raw: Redis[];

  private constructor(
    private readonly pool: pg.Pool,
    /** The masters the lab started (undefined where the caller supplied its own). */
    readonly masters: ReadonlyArray<RedisServer | undefined>,
    readonly urls: readonly string[],
    private readonly stops: ReadonlyArray<() => Promise<void>>,
  ) {
    this.raw = urls.map((url) => {
      const redis = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
      redis.on('error', () => undefined); // a master killed on purpose
      return redis;
    });
  }

  static async start(pool: pg.Pool, options: RedlockLabOptions = {}): Promise<RedlockLab> {
    const started = await Promise.all(
      Array.from({ length: 5 }, async (_, i) => {
        const custom = options.custom?.[i];
        if (custom) {
          const server = await custom();
          return { master: undefined, url: server.url, stop: () => server.stop() };
        }
        const master = await RedisServer.start({ args: options.args?.(i) ?? [] });
        return { master, url: master.url, stop: () => master.stop() };
      }),
    );
    return new RedlockLab(
      pool,
      started.map((s) => s.master),
      started.map((s) => s.url),
      started.map((s) => s.stop),
    );
  }

  /** A lab master by index (one the lab started). */
  master(index: number): RedisServer {
    const master = this.masters[index];
    if (!master) throw new Error(`master ${index} was started by the caller`);
    return master;
  }

  /** A client over the masters, directly or (`linked`) through a fault proxy per master. */
  async client(
    options: { linked?: boolean; nodeTimeoutMs?: number; watchdogTimeoutMs?: number } = {},
  ): Promise<LinkedRedlock> {
    const links = options.linked
      ? await Promise.all(
          this.urls.map((url) => {
            const { hostname, port } = new URL(url);
            return FaultProxy.start({ host: hostname, port: Number(port) });
          }),
        )
      : [];
    const client = new RedlockClient({
      nodes: options.linked ? links.map((link) => link.url) : this.urls,
      fencing: new PostgresTokenSource(this.pool),
      // A loaded 2-core machine answers slower than the spec's 5–50 ms; still small next to the leases.
      nodeTimeoutMs: options.nodeTimeoutMs ?? 300,
      ...(options.watchdogTimeoutMs === undefined ? {} : { watchdogTimeoutMs: options.watchdogTimeoutMs }),
    });
    client.on('connectionError', () => undefined); // masters killed on purpose
    const linked = { client, links };
    this.clients.push(linked);
    return linked;
  }

  /** PTTL of the Redlock key of `lock` on master `index` (-2: the master does not have it). */
  async pttl(index: number, lock: string): Promise<number> {
    return this.raw[index]!.pttl(`ls:{${lock}}:redlock`);
  }

  async stop(): Promise<void> {
    for (const { links } of this.clients) {
      for (const link of links) {
        link.set('pass');
        link.reset(); // a blackholed connection would keep QUIT waiting
      }
    }
    for (const master of this.masters) master?.signal('SIGCONT'); // a paused master would keep QUIT waiting
    await Promise.all(this.clients.map(({ client }) => client.close()));
    await Promise.all(this.clients.flatMap(({ links }) => links.map((link) => link.stop())));
    this.raw.forEach((redis) => redis.disconnect());
    await Promise.all(this.stops.map((stop) => stop()));
  }
}
