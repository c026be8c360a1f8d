import { EventEmitter } from 'node:events';
import type { RedisClient } from './client-port.js';

/**
 * The node-redis adapter (the `redis` package, v5: `createClient`, `createCluster`, `createSentinel`):
 * the client port (`RedisClient`, ioredis' shape, which ioredis and iovalkey have natively) over a
 * node-redis client the caller passed. Everything goes through node-redis' own `sendCommand` — the
 * Cluster's with the command's first key, so it routes by slot as ioredis does — and its sharded
 * pub/sub. Nothing here imports `redis`: the caller's client is used by shape, so `lockstock` loads
 * without the package and any copy of node-redis v5 fits.
 */

/** The parts of a node-redis client, Cluster or Sentinel this adapter calls (all of v5's). */
interface NodeRedisCommon {
  readonly isOpen: boolean;
  readonly isReady?: boolean;
  connect(): Promise<unknown>;
  close?(): Promise<void>;
  quit?(): Promise<unknown>;
  destroy(): unknown;
  sSubscribe(channels: string[], listener: (message: string, channel: string) => void): Promise<unknown>;
  sUnsubscribe(channels: string[]): Promise<unknown>;
  on(event: string, listener: (...args: never[]) => void): unknown;
  options?: unknown;
}
interface NodeRedisSingle extends NodeRedisCommon {
  sendCommand(args: string[]): Promise<unknown>;
  duplicate(): NodeRedisSingle;
}
interface NodeRedisCluster extends NodeRedisCommon {
  sendCommand(
    firstKey: string | undefined,
    isReadonly: boolean | undefined,
    args: string[],
  ): Promise<unknown>;
  readonly masters: ReadonlyArray<{ host: string; port: number }>;
}
interface NodeRedisSentinel extends NodeRedisCommon {
  sendCommand(isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  getMasterNode(): { host: string; port: number } | undefined;
}

/** Which node-redis object `value` is, by the methods only that kind has; undefined: none. */
export function nodeRedisKind(value: object): 'single' | 'cluster' | 'sentinel' | undefined {
  const v = value as Partial<Record<string, unknown>>;
  const fn = (name: string) => typeof v[name] === 'function';
  if (!fn('sendCommand') || !fn('sSubscribe') || !fn('connect') || typeof v.isOpen !== 'boolean') {
    return undefined;
  }
  // ioredis has none of these: its `sendCommand` takes a Command, and it has no `isOpen`.
  if (fn('nodeClient') && Array.isArray(v.masters)) return 'cluster';
  if (fn('getSentinelNode') && fn('getMasterNode')) return 'sentinel';
  if (fn('duplicate')) return 'single';
  return undefined;
}

const str = (values: ReadonlyArray<string | number>): string[] => values.map(String);

/**
 * A node-redis client as a `RedisClient`. `view`: this adapter shares the caller's Cluster or
 * Sentinel for pub/sub (node-redis keeps their subscriptions on connections of their own), so its
 * `quit()` only drops its subscriptions and never closes the caller's client.
 */
export class NodeRedisAdapter extends EventEmitter implements RedisClient {
  readonly isCluster: boolean;
  readonly options: { readonly enableAutoPipelining?: boolean; host?: string; port?: number };
  private readonly channels = new Set<string>();
  private readonly onMessage = (message: string, channel: string) => this.emit('smessage', channel, message);

  constructor(
    private readonly native: NodeRedisCommon,
    readonly kind: 'single' | 'cluster' | 'sentinel',
    private readonly view = false,
  ) {
    super();
    this.isCluster = kind === 'cluster';
    this.options = addressOf(native, kind);
    if (!view) {
      native.on('error', (error: Error) => this.emit('error', error));
      // node-redis emits 'ready' on every (re)connection of a single client; waiters re-check then.
      native.on('ready', () => this.emit('ready'));
    }
    // ioredis connects by itself; a node-redis client the caller has not connected yet would refuse
    // every command, so it is connected here, as ioredis would (a failure shows as 'error').
    if (!native.isOpen) native.connect().catch((error: unknown) => this.emit('error', error));
  }

  private discovery: Promise<void> | undefined;

  /** Resolves once the Cluster knows its slots ('connect'), rejects on its first error meanwhile. */
  private discovered(): Promise<void> {
    this.discovery ??= new Promise<void>((resolve, reject) => {
      const native = this.native as NodeRedisCommon & EventEmitter;
      const done = (error?: Error) => {
        native.off('connect', onConnect);
        native.off('error', onError);
        this.discovery = undefined;
        if (error) reject(error);
        else resolve();
      };
      const onConnect = () => done();
      const onError = (error: Error) => done(error);
      native.on('connect', onConnect);
      native.on('error', onError);
      if (!this.native.isOpen) done(new Error('The node-redis Cluster is closed'));
    });
    return this.discovery;
  }

  get status(): string {
    if (this.native.isReady ?? this.native.isOpen) return 'ready';
    return this.native.isOpen ? 'connecting' : 'end';
  }

  private send(args: string[], firstKey?: string): Promise<unknown> {
    switch (this.kind) {
      case 'cluster': {
        const cluster = this.native as NodeRedisCluster;
        if (cluster.masters.length > 0) return cluster.sendCommand(firstKey, false, args);
        // A Cluster still discovering its slots cannot route (node-redis throws a TypeError there,
        // where ioredis queues the command): the command waits for the discovery.
        return this.discovered().then(() => cluster.sendCommand(firstKey, false, args));
      }
      case 'sentinel':
        return (this.native as NodeRedisSentinel).sendCommand(false, args);
      default:
        return (this.native as NodeRedisSingle).sendCommand(args);
    }
  }

  evalsha(sha1: string, numKeys: number, ...keysAndArgs: Array<string | number>): Promise<unknown> {
    const first = numKeys > 0 ? String(keysAndArgs[0]) : undefined;
    return this.send(['EVALSHA', sha1, String(numKeys), ...str(keysAndArgs)], first);
  }

  eval(script: string, numKeys: number, ...keysAndArgs: Array<string | number>): Promise<unknown> {
    const first = numKeys > 0 ? String(keysAndArgs[0]) : undefined;
    return this.send(['EVAL', script, String(numKeys), ...str(keysAndArgs)], first);
  }

  get(key: string): Promise<string | null> {
    return this.send(['GET', key], key) as Promise<string | null>;
  }

  mget(...keys: string[]): Promise<Array<string | null>> {
    return this.send(['MGET', ...keys], keys[0]) as Promise<Array<string | null>>;
  }

  hget(key: string, field: string): Promise<string | null> {
    return this.send(['HGET', key, field], key) as Promise<string | null>;
  }

  exists(...keys: string[]): Promise<number> {
    return this.send(['EXISTS', ...keys], keys[0]) as Promise<number>;
  }

  pttl(key: string): Promise<number> {
    return this.send(['PTTL', key], key) as Promise<number>;
  }

  zrem(key: string, ...members: string[]): Promise<number> {
    return this.send(['ZREM', key, ...members], key) as Promise<number>;
  }

  del(...keys: string[]): Promise<number> {
    return this.send(['DEL', ...keys], keys[0]) as Promise<number>;
  }

  wait(numReplicas: number, timeoutMs: number): Promise<number> {
    return this.send(['WAIT', String(numReplicas), String(timeoutMs)]) as Promise<number>;
  }

  /** Any command; on a Cluster routed by its first argument (the commands lockstock sends name a key there). */
  call(command: string, ...args: Array<string | number>): Promise<unknown> {
    return this.send([command, ...str(args)], args.length > 0 ? String(args[0]) : undefined);
  }

  ping(): Promise<string> {
    return this.send(['PING']) as Promise<string>;
  }

  async ssubscribe(...channels: string[]): Promise<unknown> {
    for (const channel of channels) this.channels.add(channel);
    return this.native.sSubscribe(channels, this.onMessage);
  }

  async sunsubscribe(...channels: string[]): Promise<unknown> {
    for (const channel of channels) this.channels.delete(channel);
    return this.native.sUnsubscribe(channels);
  }

  /**
   * The connection the shared subscriber listens on. A single client's own connection would enter
   * subscriber mode (RESP2 refuses other commands there), so it gets a copy, which this adapter then
   * owns; a Cluster and a Sentinel subscribe on connections of their own already, so the copy is a
   * view of the caller's client.
   */
  duplicate(): RedisClient {
    if (this.kind !== 'single') return new NodeRedisAdapter(this.native, this.kind, true);
    return new NodeRedisAdapter((this.native as NodeRedisSingle).duplicate(), 'single');
  }

  async connect(): Promise<unknown> {
    if (!this.native.isOpen) await this.native.connect();
    return undefined;
  }

  async quit(): Promise<unknown> {
    if (this.view) {
      const channels = [...this.channels];
      this.channels.clear();
      if (channels.length > 0 && this.native.isOpen) await this.native.sUnsubscribe(channels);
      return 'OK';
    }
    if (!this.native.isOpen) return 'OK';
    // v5 names it close(); quit() is its deprecated alias (and the only name in v4).
    if (typeof this.native.close === 'function') await this.native.close();
    else await this.native.quit?.();
    return 'OK';
  }

  disconnect(): void {
    if (this.view) {
      this.channels.clear();
      return;
    }
    if (this.native.isOpen) Promise.resolve(this.native.destroy()).catch(() => undefined);
  }
}

/** host and port for errors and the doctor (a Cluster's first master, a Sentinel's current master). */
function addressOf(native: NodeRedisCommon, kind: string): { host?: string; port?: number } {
  if (kind === 'cluster') {
    const master = (native as NodeRedisCluster).masters[0];
    return master ? { host: master.host, port: master.port } : {};
  }
  if (kind === 'sentinel') {
    const master = (native as NodeRedisSentinel).getMasterNode();
    return master ? { host: master.host, port: master.port } : {};
  }
  const options = native.options as { url?: string; socket?: { host?: string; port?: number } } | undefined;
  if (options?.socket?.host !== undefined || options?.socket?.port !== undefined) {
    return { host: options.socket.host ?? 'localhost', port: options.socket.port ?? 6379 };
  }
  if (options?.url !== undefined) {
    try {
      const url = new URL(options.url);
      return { host: url.hostname || 'localhost', port: Number(url.port || 6379) };
    } catch {
      return {};
    }
  }
  return {};
}
