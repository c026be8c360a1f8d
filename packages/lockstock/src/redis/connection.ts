import type { RedisOptions } from 'ioredis';
import { ioredisLike, isIovalkeyCluster } from './driver.js';
import { NodeRedisAdapter, nodeRedisKind } from './node-redis.js';
import type { RedisClient } from './client-port.js';
import { BackendUnreachableError, connectionCode } from '../support/unreachable.js';
import { InvalidLockOptionError } from '../support/option-error.js';

export type { RedisClient } from './client-port.js';

/** A cluster client (`isCluster` true): see `isCluster`. */
export type RedisClusterClient = RedisClient & { readonly isCluster: true };

/**
 * ioredis options (an ioredis `RedisOptions`) for a connection the lock client creates and owns. Typed
 * as any object on purpose: lockstock's declarations never name ioredis' types, so that a project
 * without ioredis (a team on another backend) type-checks them with `skipLibCheck: false`. To have
 * yours checked, write them `satisfies RedisOptions` (from ioredis).
 */
export type RedisConnectionOptions = object;

/** How callers hand lockstock a Redis: a client they own, or a URL / options for one we own. */
export type RedisSource = RedisClient | string | RedisConnectionOptions;

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

const EXPECTED =
  'an ioredis Redis or Cluster client (ioredis 5 or 6), an iovalkey Redis client, a node-redis (v5) client, Cluster or Sentinel, a redis:// URL or ioredis options';

/**
 * Whether `client` is a Redis Cluster client: keys of one lock then share a hash tag and wake-ups go
 * over shard channels. Reads ioredis' own `isCluster` flag, so it works with any copy of ioredis.
 */
export function isCluster(client: RedisClient): client is RedisClusterClient {
  return client.isCluster === true;
}

/**
 * Resolves a RedisSource. `owned` tells whether lockstock created the client (and must close it).
 *
 * A client is recognised by shape (the methods of `RedisClient`), never by class, so a client from
 * another copy or version of ioredis is used as it is, and so is iovalkey's (a fork of ioredis with its
 * API). A node-redis client, Cluster or Sentinel (by the methods only node-redis has) is used through
 * its adapter (node-redis.ts). A plain object is taken as ioredis options.
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
    assertRedisScheme(source);
    return { client: new (ioredisLike().Redis)(source, defaults) as RedisClient, owned: true };
  }
  if (typeof source !== 'object' || source === null) {
    throw new InvalidLockOptionError('redis', EXPECTED, source);
  }
  const nodeRedis = nodeRedisKind(source);
  if (nodeRedis !== undefined) {
    return {
      client: new NodeRedisAdapter(source as ConstructorParameters<typeof NodeRedisAdapter>[0], nodeRedis),
      owned: false,
    };
  }
  const methods = CLIENT_METHODS.filter(
    (name) => typeof (source as Partial<Record<string, unknown>>)[name] === 'function',
  );
  if (methods.length === CLIENT_METHODS.length && typeof (source as RedisClient).status === 'string') {
    if (isIovalkeyCluster(source)) {
      throw new InvalidLockOptionError(
        'redis',
        "an ioredis or node-redis Cluster client: iovalkey's Cluster cannot route sharded pub/sub (SSUBSCRIBE loops on MOVED), which lock wake-ups use — an iovalkey single-node or Sentinel client works",
        source,
      );
    }
    return { client: source as RedisClient, owned: false };
  }
  const prototype: unknown = Object.getPrototypeOf(source);
  if (methods.length === 0 && (prototype === Object.prototype || prototype === null)) {
    return {
      client: new (ioredisLike().Redis)({ ...defaults, ...(source as RedisOptions) }) as RedisClient,
      owned: true,
    };
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

/** URL schemes ioredis connects by (a URL without a scheme, `host:port` or a socket path, too). */
const REDIS_SCHEMES = ['redis', 'rediss'];

/**
 * Refuses a URL of another scheme (`http://`, `mysql://`): ioredis would take `http://host:6379` for
 * the host `http` and fail only at the first command, with "Reached the max retries per request
 * limit". The URL itself is never shown (it may hold a password), only its scheme.
 */
function assertRedisScheme(url: string): void {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url.trim())?.[1]?.toLowerCase();
  if (scheme === undefined || REDIS_SCHEMES.includes(scheme)) return;
  throw new InvalidLockOptionError(
    'redis',
    `a redis:// or rediss:// URL (TLS), host:port or a socket path — not a ${scheme}:// URL`,
    `${scheme}://…`,
  );
}

/** Where a client connects, for errors: host:port, a socket path, Sentinel or Cluster nodes. */
export function redisAddress(client: RedisClient): string {
  const nodes = (list: unknown): string | undefined =>
    Array.isArray(list) && list.length > 0
      ? list
          .map((node: { host?: string; port?: number } | string | number) =>
            typeof node === 'object' ? `${node.host ?? 'localhost'}:${node.port ?? 6379}` : String(node),
          )
          .join(',')
      : undefined;
  if (isCluster(client)) {
    return nodes((client as unknown as { startupNodes?: unknown }).startupNodes) ?? 'the Cluster nodes';
  }
  const options = client.options as {
    host?: string;
    port?: number;
    path?: string;
    sentinels?: unknown;
    name?: string;
  };
  const sentinels = nodes(options.sentinels);
  if (sentinels !== undefined) return `${sentinels} (Sentinels of master "${options.name ?? ''}")`;
  return options.path ?? `${options.host ?? 'localhost'}:${options.port ?? 6379}`;
}

/** Errors ioredis rejects a command with when it has no connection to send it on. */
function noConnection(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return (
    error.name === 'MaxRetriesPerRequestError' ||
    error.message === 'Connection is closed.' ||
    error.message.startsWith("Stream isn't writeable") ||
    connectionCode(error) !== undefined
  );
}

/**
 * Explains the commands of `client` that fail for want of a connection: ioredis answers them with
 * "Reached the max retries per request limit (which is 2)", which names neither the server nor why.
 * The connection's own last error (ECONNREFUSED, ENOTFOUND...) is watched — on a client lockstock
 * made; a caller's client keeps its own 'error' handling untouched, and its errors name the address
 * only — and such a failure becomes a BackendUnreachableError naming both, the command's own error
 * its cause (lock calls then throw LockConnectionError). Any other error is returned as it is.
 */
export function explainConnectionErrors(
  client: RedisClient,
  owned: boolean,
  backend = 'redis',
): (error: unknown) => unknown {
  let lastError: Error | undefined;
  if (owned) client.on('error', (error: Error) => (lastError = error));
  client.on('ready', () => (lastError = undefined));
  return (error) => {
    if (!noConnection(error) || client.status === 'ready') return error;
    const code = connectionCode(lastError) ?? connectionCode(error);
    const detail =
      lastError === undefined
        ? `no connection (ioredis status: ${client.status})`
        : code === undefined
          ? `the connection failed: ${lastError.message}`
          : '';
    // The cause stays ioredis' own error, as LockBackendError's always was: code that recognises it
    // (MaxRetriesPerRequestError: Redis is down) still does; the socket's error is in code and message.
    return new BackendUnreachableError(backend, redisAddress(client), code, detail, { cause: error });
  };
}

/** Commands the lock resources send directly (not through a ScriptRunner): see explainingClient. */
const DIRECT_COMMANDS = new Set(['get', 'mget', 'hget', 'exists', 'pttl', 'zrem', 'del', 'wait']);

/** `client` whose direct commands fail as `explain` says (for lock resources' reads). */
export function explainingClient<C extends RedisClient>(client: C, explain: (error: unknown) => unknown): C {
  return new Proxy(client, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof property !== 'string' || !DIRECT_COMMANDS.has(property) || typeof value !== 'function')
        return value;
      return (...args: unknown[]) =>
        (value as (...a: unknown[]) => Promise<unknown>).apply(target, args).catch((error: unknown) => {
          throw explain(error);
        });
    },
  });
}
