import type { RedisClient } from './connection.js';
import type { ScriptRunner } from './scripts.js';
import { type BackendHost } from '../backend/index.js';
import type { ClientTurns } from './turns.js';

/** What every Redis lock resource shares with the client that created it. */
export interface RedisLockContext {
  readonly client: RedisClient;
  readonly scripts: ScriptRunner;
  readonly keyPrefix: string;
  /** Identifies this client in the turn queue of waiting clients (see client-turns.lua). */
  readonly clientId: string;
  /** How long a free lock stays reserved for the client whose turn it is, in ms. */
  readonly turnWindowMs: number;
  /** The turn protocol's state on this client: local hand-off streaks, turn messages (turns.ts). */
  readonly turns: ClientTurns;
  /** How long a silent waiter keeps its place in a fair queue (or a writer's intent), in ms. */
  readonly waiterTimeoutMs: number;
  /** Whether holds store their holder's record (the client's `holderMetadata` option). */
  readonly holderMetadata: boolean;
  readonly core: BackendHost;
}

/** The keys of one lock name share the hash tag `{name}`, so scripts stay on one Cluster slot. */
export const lockBase = (ctx: RedisLockContext, name: string): string => `${ctx.keyPrefix}:{${name}}`;

/** A script's `{retry ms}` refusal as a retry hint: negative means "until woken". */
export function retryHint(reply: unknown): number | undefined {
  const ms = Array.isArray(reply) ? Number(reply[0]) : NaN;
  return ms >= 0 ? ms : undefined;
}
