import type { RedisOptions } from 'ioredis';
import { ioredis } from './driver.js';
import { InvalidLockOptionError } from '../support/option-error.js';

/**
 * What lockstock needs from a Redis client, by shape: an ioredis `Redis` or `Cluster`, of ioredis 5
 * or 6, from whichever copy of ioredis the application loaded (a monorepo or a package manager may
 * give the application and lockstock different copies; a class check would fail on those).
 *
 * Every method lockstock (and the service built on `lockstock/redis`) calls on a client it was given
 * is listed here: code in this repository that calls another command on a `RedisClient` must add it
 * here, with the narrowest signature that ioredis' own typings satisfy. Parameters are loose and
 * replies are the RESP2 ones; methods (not function properties) so that ioredis' overloads match.
 */
export interface RedisClient {
  /** ioredis' connection state ('wait', 'connecting', 'ready', 'end', ...). */
  readonly status: string;
  readonly options: { readonly enableAutoPipelining?: boolean | undefined };
  /** True on a cluster client: ioredis sets it on every `Redis` (false) and `Cluster` (true). */
  readonly isCluster: boolean;
  evalsha(sha1: string, numKeys: number, ...keysAndArgs: Array<string | number>): Promise<unknown>;
  eval(script: string, numKeys: number, ...keysAndArgs: Array<string | number>): Promise<unknown>;
  get(key: string): Promise<string | null>;
  hget(key: string, field: string): Promise<string | null>;
  exists(...keys: string[]): Promise<number>;
  /** Remaining time to live in ms; -1 without expiry, -2 if the key does not exist. */
  pttl(key: string): Promise<number>;
  zrem(key: string, ...members: string[]): Promise<number>;
  /** Administrative deletes (Redlock's forceUnlock). */
  del(...keys: string[]): Promise<number>;
  /** WAIT: blocks this connection until its writes reached `numReplicas` replicas, or the timeout. */
  wait(numReplicas: number, timeoutMs: number): Promise<number>;
  /** Any command by name (ScriptRunner.command on a client of another copy of ioredis). */
  call(command: string, ...args: Array<string | number>): Promise<unknown>;
  /** For health checks (the service's `/healthz`). */
  ping(): Promise<string>;
  ssubscribe(...channels: string[]): Promise<unknown>;
  sunsubscribe(...channels: string[]): Promise<unknown>;
  /** A new connection with the same settings (ioredis: `duplicate(override?)`, cluster: `duplicate(nodes?, options?)`). */
  duplicate(...overrides: unknown[]): RedisClient;
  /** The events lockstock listens to (a shard channel message, reconnected, connection error). */
  on(event: 'smessage', listener: (channel: string, message: string) => void): unknown;
  on(event: 'ready', listener: () => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  once(event: 'ready', listener: () => void): unknown;
  once(event: 'error', listener: (error: Error) => void): unknown;
  /** Starts connecting a client created with `lazyConnect` (Redlock waits for its masters). */
  connect(): Promise<unknown>;
  quit(): Promise<unknown>;
  disconnect(): void;
}

/** A cluster client (`isCluster` true): see `isCluster`. */
export type RedisClusterClient = RedisClient & { readonly isCluster: true };

/** How callers hand lockstock a Redis: a client they own, or a URL / options for one we own. */
export type RedisSource = RedisClient | string | RedisOptions;

/** The methods checked at run time before a value is used as a client. */
const CLIENT_METHODS = [
  'evalsha',
  'eval',
  'get',
  'hget',
  'exists',
  'pttl',
  'zrem',
  'ssubscribe',
  'sunsubscribe',
  'duplicate',
  'on',
  'quit',
  'disconnect',
] as const satisfies ReadonlyArray<keyof RedisClient>;

const EXPECTED = 'an ioredis Redis or Cluster client (ioredis 5 or 6), a redis:// URL or ioredis options';

export function isCluster(client: RedisClient): client is RedisClusterClient {
  return client.isCluster === true;
}

/**
 * Resolves a RedisSource. `owned` tells whether lockstock created the client (and must close it).
 *
 * A client is recognised by shape (the methods of `RedisClient`), never by class, so a client from
 * another copy or version of ioredis is used as it is. A plain object is taken as ioredis options.
 * Anything else — an object that has some client methods but not all (another Redis library, a
 * mock), a class instance, an empty URL — is refused with InvalidLockOptionError rather than
 * silently replaced by a new connection to the default 127.0.0.1:6379.
 *
 * Clients we create fail fast instead of queueing commands forever while Redis is down: a lock call
 * that cannot reach Redis should surface as an error within seconds, not hang.
 */
export function resolveRedis(source: RedisSource): { client: RedisClient; owned: boolean } {
  const defaults: RedisOptions = { maxRetriesPerRequest: 2, connectTimeout: 5_000 };
  if (typeof source === 'string') {
    if (source.trim() === '') throw new InvalidLockOptionError('redis', EXPECTED, source);
    return { client: new (ioredis().Redis)(source, defaults), owned: true };
  }
  if (typeof source !== 'object' || source === null) {
    throw new InvalidLockOptionError('redis', EXPECTED, source);
  }
  const methods = CLIENT_METHODS.filter(
    (name) => typeof (source as Partial<Record<string, unknown>>)[name] === 'function',
  );
  if (methods.length === CLIENT_METHODS.length && typeof (source as RedisClient).status === 'string') {
    return { client: source as RedisClient, owned: false };
  }
  const prototype: unknown = Object.getPrototypeOf(source);
  if (methods.length === 0 && (prototype === Object.prototype || prototype === null)) {
    return { client: new (ioredis().Redis)({ ...defaults, ...(source as RedisOptions) }), owned: true };
  }
  const missing = CLIENT_METHODS.filter((name) => !methods.includes(name));
  throw new InvalidLockOptionError(
    'redis',
    methods.length > 0 ? `${EXPECTED} (this client has no ${missing.join(', ')})` : EXPECTED,
    source,
  );
}

/**
 * A second connection with the same settings (pub/sub needs its own connection). The result has
 * the type of the client it was made from (ioredis' `duplicate` returns the same kind of client).
 */
export function duplicateClient<C extends RedisClient>(client: C): C {
  // No ready check on the copy: ioredis 5 sends its INFO after an asynchronous CLIENT SETINFO, and a
  // subscription issued in between puts the connection in subscriber mode first — the INFO is then
  // refused (an unhandled rejection inside ioredis) and the connection never becomes ready.
  return (
    isCluster(client)
      ? client.duplicate(undefined, { shardedSubscribers: true })
      : client.duplicate({ enableReadyCheck: false })
  ) as C;
}
