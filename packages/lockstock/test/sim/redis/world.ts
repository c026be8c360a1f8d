import { LOCK_SCRIPTS } from '../../../src/redis/lock-scripts.js';
import { RedisLockClient } from '../../../src/redis/client.js';
import type { LuaScript } from '../../../src/redis/scripts.js';
import type { Recorder } from '../recorder.js';
import type { SimKind, SimWorld } from '../run.js';
import type { Scheduler } from '../scheduler.js';
import { SimRedisConnection } from './connection.js';
import type { RedisModel } from './model.js';
import { SimRedisServer, type ScriptRun } from './server.js';

/** The kinds the Redis adapter runs under simulation (latches: their scenario reads SimStore's own record). */
export const REDIS_SIM_KINDS: readonly SimKind[] = [
  'mutex',
  'reentrant',
  'fair',
  'spin',
  'read-write',
  'semaphore',
  'counter-semaphore',
  'election',
];

/** A fair or write waiter's place lapses this long after its last try (run.ts: QUEUE_TTL_MS). */
const WAITER_TIMEOUT_MS = 2_500;

/** Scripts whose number (or numeric string) reply is a grant to ARGV[1]. */
const ACQUIRES: ReadonlySet<LuaScript> = new Set([
  LOCK_SCRIPTS.mutexAcquire,
  LOCK_SCRIPTS.reentrantAcquire,
  LOCK_SCRIPTS.fairAcquire,
  LOCK_SCRIPTS.readAcquire,
  LOCK_SCRIPTS.writeAcquire,
  LOCK_SCRIPTS.semaphoreAcquire,
  LOCK_SCRIPTS.counterSemaphoreAcquire,
]);

/** Release scripts whose array reply is a hand-off: to ARGV[5] (the offered waiter), or reply[1]. */
const HAND_OFFS: ReadonlySet<LuaScript> = new Set([
  LOCK_SCRIPTS.mutexRelease,
  LOCK_SCRIPTS.reentrantRelease,
  LOCK_SCRIPTS.semaphoreRelease,
  LOCK_SCRIPTS.fairRelease,
]);

const BY_SHA = new Map(Object.values(LOCK_SCRIPTS).map((script) => [script.sha1, script]));

/** The lock name in a key `<prefix>:{<name>}...`. */
const lockOf = (key: string | undefined) => /\{([^}]*)\}/.exec(key ?? '')?.[1] ?? '';

/**
 * The real Redis adapter (RedisLockClient, src/redis/) over the simulated Redis: the shipped Lua
 * scripts run unchanged (unless `edit` mutates them) in fengari over the command model, each client
 * on its own simulated connections. The history's store-side events come from the scripts' effects:
 * `offered` when a script granted an owner (whether or not the reply arrives), `queued` when the fair
 * acquire put its caller in the queue.
 */
export function redisWorld(edit?: (source: string) => string) {
  return ({
    scheduler,
    recorder,
  }: {
    scheduler: Scheduler;
    recorder: Recorder;
  }): SimWorld & {
    server: SimRedisServer;
  } => {
    const server: SimRedisServer = new SimRedisServer(
      () => scheduler.now,
      edit,
      (run, before) => observe(recorder, server.model, run, before),
    );
    return {
      server,
      client: (actor, rng, network, watchdogTimeoutMs) =>
        new RedisLockClient({
          redis: new SimRedisConnection(server, scheduler, actor, network, rng),
          watchdogTimeoutMs,
          waiterTimeoutMs: WAITER_TIMEOUT_MS,
          // The first acquire's INFO is no lock step: the simulated Redis models lock commands only,
          // and a schedule must be the lock's alone.
          serverChecks: 'off',
        }),
      // A Redis key does not name its owner the way SimStore does: the key alone is reported.
      held: () => heldKeys(server).map((key) => ({ key, owner: '(a Redis key)' })),
    };
  };
}

function observe(
  recorder: Recorder,
  model: RedisModel,
  run: ScriptRun,
  before: (key: string, member: string) => boolean,
): void {
  const script = BY_SHA.get(run.sha1);
  const { reply, keys, args } = run;
  if (!script || reply === undefined) return;
  const lock = lockOf(keys[0]);
  if (
    ACQUIRES.has(script) &&
    (typeof reply === 'number' || (typeof reply === 'string' && /^\d+$/.test(reply)))
  ) {
    recorder.offered(args[0]!, lock);
  }
  if (script === LOCK_SCRIPTS.fairAcquire && Array.isArray(reply) && !before(keys[1]!, args[0]!)) {
    // Refused: queued if the queue (KEYS[2]) holds the caller now and did not before.
    if (model.zscore(keys[1]!, args[0]!) !== null) recorder.queued(args[0]!, lock);
  }
  if (HAND_OFFS.has(script) && Array.isArray(reply)) {
    const owner = script === LOCK_SCRIPTS.fairRelease ? String(reply[1]) : args[4];
    if (owner) recorder.offered(owner, lock);
  }
}

/**
 * Lock state left in the model: every key but the fencing counters, the permits setting and the
 * counter semaphore's count at zero (they outlive holds by design: tokens never repeat, permits are
 * configuration). A lease that ran out has expired its key; a semaphore's zset holds no live permit.
 */
function heldKeys(server: SimRedisServer): string[] {
  const { model } = server;
  const now = model.nowMs();
  return model.keys().filter((key) => {
    // Orderings whose entries lapse lazily (the next script drops a dead waiter): a waiter's place is
    // live only while its deadline (':deadlines', a zset checked below) lies ahead.
    if (/:(fence|permits|queue|waiters)$/.test(key)) return false;
    try {
      const value = model.get(key);
      if (value === '0') return false;
    } catch {
      // not a string
    }
    try {
      const live = model.zrangebyscore(key, `(${now}`, '+inf', []) as string[];
      return live.length > 0;
    } catch {
      return true;
    }
  });
}
