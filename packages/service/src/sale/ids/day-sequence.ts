import { DEFAULT_KEY_PREFIX } from 'lockstock/redis';
import type { SaleRedis } from '../redis.js';

/** 2024-01-01T00:00:00Z in seconds. */
const EPOCH_SECONDS = 1_704_067_200;

/**
 * The seed's "RedisIdWorker": 64-bit ids from 31 bits of seconds since 2024 and a 32-bit Redis INCR
 * counter per day. Unique and time-ordered across processes, but it costs a round trip per id, so
 * the reservation hot path uses SnowflakeIdGenerator instead. Kept for comparison (and for callers
 * that want ids without leasing worker ids).
 */
export class RedisDayIdGenerator {
  constructor(
    private readonly redis: SaleRedis,
    private readonly namespace = 'order',
    private readonly keyPrefix = DEFAULT_KEY_PREFIX,
  ) {}

  async next(now = new Date()): Promise<string> {
    const seconds = Math.floor(now.getTime() / 1000) - EPOCH_SECONDS;
    const day = now.toISOString().slice(0, 10).replaceAll('-', ':');
    const sequence = await this.redis.incr(`${this.keyPrefix}:icr:${this.namespace}:${day}`);
    if (sequence >= 2 ** 32) throw new RangeError(`more than 2^32 ids issued on ${day}`);
    return ((BigInt(seconds) << 32n) | BigInt(sequence)).toString();
  }
}
