import { randomBytes, randomInt } from 'node:crypto';
import { loadLuaScript, type ScriptRunner } from 'lockstock/redis';
import type { SaleContext } from '../context/context.js';
import type { SaleRedis } from '../redis.js';

const renewScript = loadLuaScript(new URL('./worker-renew.lua', import.meta.url));

/** 2024-01-01T00:00:00Z: 41 bits of milliseconds from here last until 2093. */
export const SNOWFLAKE_EPOCH_MS = 1_704_067_200_000;
const WORKER_BITS = 10n;
const SEQUENCE_BITS = 12n;
export const MAX_WORKERS = 1 << Number(WORKER_BITS);
const MAX_SEQUENCE = (1 << Number(SEQUENCE_BITS)) - 1;

/** Thrown when ids cannot be issued safely (no worker id held). */
export class IdGeneratorUnavailableError extends Error {
  override readonly name = 'IdGeneratorUnavailableError';
  readonly code = 'ERR_ID_GENERATOR_UNAVAILABLE';
}

/**
 * 64-bit, time-ordered ids without a round trip per id (Twitter's snowflake):
 * 41 bits of milliseconds since 2024 | 10 bits worker id | 12 bits sequence.
 *
 * The worker id is leased from Redis (`SET key instance NX PX`) and renewed every third of the lease,
 * so no two live generators share one. If a renewal finds the lease gone, the generator stops issuing
 * ids (next() throws) until it has leased a worker id again: two processes with one worker id could
 * issue the same id. Ids are strictly increasing per generator even if the wall clock steps back
 * (the last timestamp is reused and the sequence carries on; a full sequence borrows the next ms).
 */
export class SnowflakeIdGenerator {
  private workerId: number | undefined;
  private base = 0n;
  private lastMs = -1;
  private sequence = 0;
  private renewTimer: NodeJS.Timeout | undefined;
  private readonly scripts: ScriptRunner;
  private readonly redis: SaleRedis;
  private readonly instance = randomBytes(12).toString('base64url');

  constructor(
    private readonly context: SaleContext,
    private readonly options: {
      /** Lease of the worker id in ms. @default 30000 */
      leaseMs?: number;
      /** Called when the lease was lost or could not be renewed (ids stop until re-leased). */
      onLeaseLost?: (error: Error) => void;
    } = {},
  ) {
    this.redis = context.redis;
    this.scripts = context.scripts;
  }

  private get leaseMs(): number {
    return this.options.leaseMs ?? 30_000;
  }

  private leaseKey(workerId: number): string {
    return `${this.context.prefix}:idworker:${workerId}`;
  }

  /** Leases a free worker id (probing from a random start) and starts renewing it. */
  async start(): Promise<number> {
    const first = randomInt(MAX_WORKERS);
    for (let i = 0; i < MAX_WORKERS; i++) {
      const candidate = (first + i) % MAX_WORKERS;
      const ok = await this.redis.set(this.leaseKey(candidate), this.instance, 'PX', this.leaseMs, 'NX');
      if (ok === 'OK') {
        this.useWorker(candidate);
        this.scheduleRenewal();
        return candidate;
      }
    }
    throw new IdGeneratorUnavailableError(`all ${MAX_WORKERS} snowflake worker ids are leased`);
  }

  private useWorker(workerId: number): void {
    this.workerId = workerId;
    this.lastMs = -1;
  }

  private scheduleRenewal(): void {
    this.renewTimer = setTimeout(() => void this.renew(), this.leaseMs / 3);
    this.renewTimer.unref();
  }

  private async renew(): Promise<void> {
    const workerId = this.workerId;
    if (workerId === undefined) return;
    try {
      const renewed = await this.scripts.run(
        renewScript,
        [this.leaseKey(workerId)],
        [this.instance, this.leaseMs],
      );
      // Gone (a Redis that came back without it, before recovery's confirm()): taken back if nobody
      // took it meanwhile, as confirm() does — the same outage must not be reported twice.
      const retaken = renewed !== 1 && (await this.retake(workerId));
      if (renewed !== 1 && !retaken) {
        this.workerId = undefined;
        this.options.onLeaseLost?.(
          new IdGeneratorUnavailableError(`lost the lease on worker id ${workerId}`),
        );
        await this.start().catch((error: Error) => this.options.onLeaseLost?.(error));
        return;
      }
    } catch (error) {
      this.options.onLeaseLost?.(error as Error);
    }
    if (this.workerId !== undefined) this.scheduleRenewal();
  }

  /**
   * Takes a lease that is gone back for this generator: true when the key is this generator's now —
   * set here, or already by the other path (a renewal and recovery's confirm() may both find it gone
   * after a Redis came back, and the second's SET NX then finds the first's).
   */
  private async retake(workerId: number): Promise<boolean> {
    const key = this.leaseKey(workerId);
    if ((await this.redis.set(key, this.instance, 'PX', this.leaseMs, 'NX')) === 'OK') return true;
    return (await this.redis.get(key)) === this.instance;
  }

  /**
   * Makes sure the lease is still this generator's, now (recovery calls it after the Redis connection
   * came back, before anything is sold: a Redis that lost data may have lost the lease, and another
   * process could then lease the same worker id). A lease that is gone is leased again — this worker
   * id if it is free, another one otherwise; a lease held by someone else stops the ids at once.
   */
  async confirm(): Promise<void> {
    const workerId = this.workerId;
    if (workerId !== undefined) {
      const key = this.leaseKey(workerId);
      const renewed = await this.scripts.run(renewScript, [key], [this.instance, this.leaseMs]);
      if (renewed === 1) return;
      // Gone: take this worker id back if nobody took it meanwhile (ids stay in one sequence).
      if (await this.retake(workerId)) return;
      this.workerId = undefined;
      this.options.onLeaseLost?.(new IdGeneratorUnavailableError(`lost the lease on worker id ${workerId}`));
    }
    clearTimeout(this.renewTimer);
    await this.start();
  }

  get worker(): number | undefined {
    return this.workerId;
  }

  /** The next id, as a decimal string (64-bit ids do not fit a JS number). */
  next(): string {
    const workerId = this.workerId;
    if (workerId === undefined) throw new IdGeneratorUnavailableError('no snowflake worker id is leased');
    const now = Date.now() - SNOWFLAKE_EPOCH_MS;
    if (now > this.lastMs) {
      this.lastMs = now;
      this.sequence = 0;
      this.base = (BigInt(now) << (WORKER_BITS + SEQUENCE_BITS)) | (BigInt(workerId) << SEQUENCE_BITS);
    } else if (++this.sequence > MAX_SEQUENCE) {
      // Clock stood still or went back and this millisecond is used up: borrow the next one.
      this.lastMs++;
      this.sequence = 0;
      this.base =
        (BigInt(this.lastMs) << (WORKER_BITS + SEQUENCE_BITS)) | (BigInt(workerId) << SEQUENCE_BITS);
    }
    return (this.base | BigInt(this.sequence)).toString();
  }

  /** Stops renewing and gives the worker id back. */
  async stop(): Promise<void> {
    clearTimeout(this.renewTimer);
    const workerId = this.workerId;
    this.workerId = undefined;
    if (workerId === undefined) return;
    const key = this.leaseKey(workerId);
    if ((await this.redis.get(key)) === this.instance) await this.redis.del(key);
  }
}

/** Splits a snowflake id into its parts (for tests and debugging). */
export function decodeSnowflake(id: string): { timestampMs: number; workerId: number; sequence: number } {
  const value = BigInt(id);
  return {
    timestampMs: Number(value >> (WORKER_BITS + SEQUENCE_BITS)) + SNOWFLAKE_EPOCH_MS,
    workerId: Number((value >> SEQUENCE_BITS) & BigInt(MAX_WORKERS - 1)),
    sequence: Number(value & BigInt(MAX_SEQUENCE)),
  };
}
