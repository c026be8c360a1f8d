/**
 * What lockstock needs from a Redis client, by shape (node-redis clients reach it through
 * node-redis.ts, iovalkey's natively): an ioredis `Redis` or `Cluster`, of ioredis 5
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
  /** EVALSHA: runs a cached script by its SHA-1 (every lock operation is one; see ScriptRunner). */
  evalsha(sha1: string, numKeys: number, ...keysAndArgs: Array<string | number>): Promise<unknown>;
  /** EVAL: runs a script by its source, and caches it (after NOSCRIPT: a restart, a failover). */
  eval(script: string, numKeys: number, ...keysAndArgs: Array<string | number>): Promise<unknown>;
  /** GET: a string key's value, or null (a latch's count, a mutex's holder, a fenced store's value). */
  get(key: string): Promise<string | null>;
  /** MGET: string values of keys on one slot, null for each missing (a semaphore's holder records). */
  mget(...keys: string[]): Promise<Array<string | null>>;
  /** HGET: one field of a hash, or null (a reentrant holder's hold count). */
  hget(key: string, field: string): Promise<string | null>;
  /** EXISTS: how many of `keys` exist. */
  exists(...keys: string[]): Promise<number>;
  /** Remaining time to live in ms; -1 without expiry, -2 if the key does not exist. */
  pttl(key: string): Promise<number>;
  /** ZREM: removes members of a sorted set (a waiter leaving a fair lock's queue). */
  zrem(key: string, ...members: string[]): Promise<number>;
  /** Administrative deletes (Redlock's forceUnlock). */
  del(...keys: string[]): Promise<number>;
  /** WAIT: blocks this connection until its writes reached `numReplicas` replicas, or the timeout. */
  wait(numReplicas: number, timeoutMs: number): Promise<number>;
  /** Any command by name (ScriptRunner.command on a client of another copy of ioredis). */
  call(command: string, ...args: Array<string | number>): Promise<unknown>;
  /** For health checks (the service's `/healthz`). */
  ping(): Promise<string>;
  /** SSUBSCRIBE: the shared subscriber listens to lock wake-up channels (shard channels on a cluster). */
  ssubscribe(...channels: string[]): Promise<unknown>;
  /** SUNSUBSCRIBE: stops listening once no waiter of this client waits on those channels. */
  sunsubscribe(...channels: string[]): Promise<unknown>;
  /** A new connection with the same settings (ioredis: `duplicate(override?)`, cluster: `duplicate(nodes?, options?)`). */
  duplicate(...overrides: unknown[]): RedisClient;
  /** The events lockstock listens to (a shard channel message, reconnected, connection error). */
  on(event: 'smessage', listener: (channel: string, message: string) => void): unknown;
  /** The client is connected and ready (again, after a reconnect: waiters re-check their locks). */
  on(event: 'ready', listener: () => void): unknown;
  /** A connection error: kept to explain the commands that fail meanwhile, and reported. */
  on(event: 'error', listener: (error: Error) => void): unknown;
  /** The first time the client is ready (waiting for a connection before the first command). */
  once(event: 'ready', listener: () => void): unknown;
  /** The first connection error while waiting for the client to be ready. */
  once(event: 'error', listener: (error: Error) => void): unknown;
  /** Starts connecting a client created with `lazyConnect` (Redlock waits for its masters). */
  connect(): Promise<unknown>;
  /** QUIT: closes a client lockstock owns once its replies are in (the lock client's `close()`). */
  quit(): Promise<unknown>;
  /** Closes the connection at once, without waiting for replies (when QUIT cannot be sent). */
  disconnect(): void;
}
