import { EventEmitter } from 'node:events';
import type { Network } from '../backend.js';
import type { Rng } from '../random.js';
import type { Actor, Scheduler } from '../scheduler.js';
import { RedisError, type Reply } from './model.js';
import type { SimRedisServer } from './server.js';

/**
 * One simulated connection to the simulated Redis, shaped as the ioredis client the Redis adapter
 * takes (src/redis/connection.ts, RedisClient: the methods lockstock calls, nothing else). The
 * adapter recognises a client by shape, so this is what a user's ioredis client would be to it.
 *
 * Each command is a request and a reply through the schedule's faulty network, as SimBackend's calls
 * are: delays, in order on one connection (a TCP stream) unless the schedule reorders, and lost
 * requests or replies — a lost one fails after `timeoutMs` with ioredis' own "Command timed out"
 * (its `commandTimeout`), the outcome unknown to the caller. The command runs at the server when
 * its request arrives, atomically. Pub/sub messages travel the same way to the actor.
 */
export class SimRedisConnection extends EventEmitter {
  readonly status = 'ready';
  readonly options = { enableAutoPipelining: false };
  readonly isCluster = false;
  private requestsAt = 0;
  private repliesAt = 0;
  private readonly unsubscribes = new Map<string, () => void>();

  constructor(
    private readonly server: SimRedisServer,
    private readonly scheduler: Scheduler,
    private readonly actor: Actor,
    private readonly network: () => Network,
    private readonly rng: Rng,
  ) {
    super();
  }

  /** One command: runs at the server when the request arrives; the reply travels back. */
  private send(name: string, args: ReadonlyArray<string | number>, lossy = true): Promise<unknown> {
    const { scheduler, actor } = this;
    const net = this.network();
    const lost =
      lossy && this.rng.chance(net.lossRate) ? this.rng.pick(['request', 'reply'] as const) : undefined;
    return new Promise((resolve, reject) => {
      const timedOut = () =>
        scheduler.after(net.timeoutMs, actor, () => reject(new Error('Command timed out')));
      scheduler.at(this.inOrder('request'), undefined, () => {
        if (lost === 'request') return void timedOut();
        let outcome: { value: unknown } | { error: unknown };
        try {
          outcome = { value: toIoredis(this.server.execute(name, args)) };
        } catch (error) {
          if (!(error instanceof RedisError)) throw error;
          outcome = { error };
        }
        if (lost === 'reply') return void timedOut();
        scheduler.at(this.inOrder('reply'), actor, () =>
          'value' in outcome ? resolve(outcome.value) : reject(outcome.error as Error),
        );
      });
    });
  }

  private inOrder(direction: 'request' | 'reply'): number {
    const at = this.scheduler.now + this.rng.next() * this.network().maxDelayMs;
    if (this.network().reorders) return at;
    if (direction === 'request') return (this.requestsAt = Math.max(this.requestsAt, at));
    return (this.repliesAt = Math.max(this.repliesAt, at));
  }

  evalsha(sha1: string, numKeys: number, ...keysAndArgs: Array<string | number>): Promise<unknown> {
    return this.send('evalsha', [sha1, numKeys, ...keysAndArgs]);
  }
  eval(script: string, numKeys: number, ...keysAndArgs: Array<string | number>): Promise<unknown> {
    return this.send('eval', [script, numKeys, ...keysAndArgs]);
  }
  get(key: string): Promise<string | null> {
    return this.send('get', [key]) as Promise<string | null>;
  }
  mget(...keys: string[]): Promise<Array<string | null>> {
    return this.send('mget', keys) as Promise<Array<string | null>>;
  }
  hget(key: string, field: string): Promise<string | null> {
    return this.send('hget', [key, field]) as Promise<string | null>;
  }
  exists(...keys: string[]): Promise<number> {
    return this.send('exists', keys) as Promise<number>;
  }
  pttl(key: string): Promise<number> {
    return this.send('pttl', [key]) as Promise<number>;
  }
  zrem(key: string, ...members: string[]): Promise<number> {
    return this.send('zrem', [key, ...members]) as Promise<number>;
  }
  del(...keys: string[]): Promise<number> {
    return this.send('del', keys) as Promise<number>;
  }
  call(command: string, ...args: Array<string | number>): Promise<unknown> {
    return this.send(command, args);
  }
  wait(): Promise<number> {
    return Promise.reject(new RedisError('ERR WAIT is not part of the simulated Redis'));
  }
  ping(): Promise<string> {
    return Promise.resolve('PONG');
  }

  /** SSUBSCRIBE: registered at the server when the request arrives; never lost (as SimBackend's). */
  async ssubscribe(...channels: string[]): Promise<unknown> {
    await this.send('ping', [], false).catch(() => undefined);
    for (const channel of channels) {
      if (this.unsubscribes.has(channel)) continue;
      this.unsubscribes.set(
        channel,
        this.server.model.subscribe(channel, (ch, message) => this.deliver(ch, message)),
      );
    }
    return channels.length;
  }

  sunsubscribe(...channels: string[]): Promise<unknown> {
    for (const channel of channels) {
      this.unsubscribes.get(channel)?.();
      this.unsubscribes.delete(channel);
    }
    return Promise.resolve(channels.length);
  }

  /** A published message on its way to this connection: lost or doubled as the network says. */
  private deliver(channel: string, message: string): void {
    const net = this.network();
    if (this.rng.chance(net.wakeLossRate)) return;
    const copies = this.rng.chance(net.duplicateRate) ? 2 : 1;
    for (let i = 0; i < copies; i++)
      this.scheduler.at(this.inOrder('reply'), this.actor, () => this.emit('smessage', channel, message));
  }

  duplicate(): SimRedisConnection {
    return new SimRedisConnection(this.server, this.scheduler, this.actor, this.network, this.rng);
  }

  connect(): Promise<unknown> {
    return Promise.resolve();
  }
  quit(): Promise<unknown> {
    for (const unsubscribe of this.unsubscribes.values()) unsubscribe();
    this.unsubscribes.clear();
    return Promise.resolve('OK');
  }
  disconnect(): void {
    void this.quit();
  }
}

/** A model reply as ioredis resolves it: a status as its text, the rest as they are. */
export function toIoredis(reply: Reply): unknown {
  if (Array.isArray(reply)) return reply.map(toIoredis);
  if (reply !== null && typeof reply === 'object') return reply.ok;
  return reply;
}
