import type { EventEmitter } from 'node:events';
import type { RedisClient } from '../../redis/connection.js';
import type { ScriptRunner } from '../../redis/scripts.js';
import type { LockClientEvents } from '../types.js';
import type { LeaseHandle } from '../handle.js';
import type { WaitQueues } from '../wait-queue.js';
import type { GrantTicket } from './base.js';
import type { Watchdog } from '../watchdog.js';

/** What every Redis lock object shares with the client that created it. */
export interface RedisLockContext {
  readonly client: RedisClient;
  readonly scripts: ScriptRunner;
  readonly keyPrefix: string;
  /** Identifies this client in the cross-client queue of waiters. */
  readonly clientId: string;
  /** How long a free lock stays reserved for the client whose turn it is, in ms. */
  readonly turnWindowMs: number;
  readonly watchdog: Watchdog;
  readonly queues: WaitQueues<LeaseHandle, GrantTicket>;
  readonly events: EventEmitter<LockClientEvents>;
  /** Throws LockClientClosedError after close(). */
  assertOpen(lockName: string): void;
}
