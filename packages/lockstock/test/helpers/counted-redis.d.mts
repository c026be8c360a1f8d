import type { Redis } from 'ioredis';

export interface CountedRedis {
  readonly redis: Redis;
  /** Scripts sent so far, and how many of them still wait for their reply. */
  readonly sent: number;
  readonly inFlight: number;
  /** Runs once, synchronously, right after the next script is handed to the socket. */
  afterNextScript(hook: () => void): void;
  /** Resolves once `count` scripts were sent and every reply is in (the caller then sleeps or holds). */
  settledAfter(count: number): Promise<void>;
}

export declare function countedRedis(url: string): CountedRedis;
