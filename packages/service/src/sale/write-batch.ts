import type { Writable } from 'node:stream';
import { isCluster } from 'lockstock/redis';
import type { Redis } from 'ioredis';
import type { SaleRedis } from './redis.js';

/**
 * Commands issued in one tick, from which that tick's writes leave at its end without waiting for
 * the rest of the phase: a tick that busy fills a write on its own, and waiting would only keep Redis
 * idle (replies processed in a batch would be answered in lockstep).
 */
const BUSY_TICK = 8;

/**
 * Holds a connection's socket writes until the event loop's poll phase is over (setImmediate), so the
 * reservations of every request that arrived in that phase leave in one write instead of one each.
 * The script runner's own coalescing ends with the current tick, which in an HTTP server is one
 * request; this outer cork spans the requests of a whole phase (Node counts corks: the runner's uncork
 * leaves the socket corked until this one). A tick that issues `BUSY_TICK` commands or more (a loop of
 * callers resumed by a batch of replies) releases at its end instead. Commands, replies and their order
 * are untouched; the wait is the rest of the phase, microseconds. Cluster clients route per node and
 * are left alone.
 */
export class PhaseWriteBatcher {
  private held: Writable | undefined;
  private heldThisTick = 0;
  private tickEndScheduled = false;
  private readonly release = () => {
    const stream = this.held;
    this.held = undefined;
    stream?.uncork();
  };
  private readonly tickEnd = () => {
    this.tickEndScheduled = false;
    if (this.heldThisTick >= BUSY_TICK) this.release();
    this.heldThisTick = 0;
  };

  constructor(private readonly redis: SaleRedis) {}

  /** Call before issuing a command: holds the socket's writes until the end of the phase. */
  hold(): void {
    const redis = this.redis;
    if (isCluster(redis) || redis.status !== 'ready') return;
    if (!this.held) {
      const stream = (redis as Redis).stream;
      stream.cork();
      this.held = stream;
      setImmediate(() => {
        if (this.held === stream) this.release();
      });
    }
    this.heldThisTick++;
    if (!this.tickEndScheduled) {
      this.tickEndScheduled = true;
      process.nextTick(this.tickEnd);
    }
  }
}
