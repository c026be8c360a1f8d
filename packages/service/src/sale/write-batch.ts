import type { Writable } from 'node:stream';
import { isCluster } from 'lockstock/redis';
import type { Redis } from 'ioredis';
import type { SaleRedis } from './redis.js';

/**
 * Holds a connection's socket writes until the event loop's poll phase is over (setImmediate), so
 * the reservations of every request that arrived in that phase leave in one write instead of one
 * each. The script runner's own coalescing ends with the current tick, which in an HTTP server is one
 * request; this outer cork spans the requests of a whole phase (Node counts corks: the inner
 * uncork leaves the socket corked until this one). Commands, replies and their order are untouched;
 * the wait is the rest of the phase, microseconds. Cluster clients route per node and are left alone.
 */
export class PhaseWriteBatcher {
  private held: Writable | undefined;
  private readonly release = () => {
    const stream = this.held;
    this.held = undefined;
    stream?.uncork();
  };

  constructor(private readonly redis: SaleRedis) {}

  /** Call before issuing a command: holds the socket's writes until the end of the phase. */
  hold(): void {
    if (this.held) return;
    const redis = this.redis;
    if (isCluster(redis) || redis.status !== 'ready') return;
    const stream = (redis as Redis).stream;
    stream.cork();
    this.held = stream;
    setImmediate(this.release);
  }
}
