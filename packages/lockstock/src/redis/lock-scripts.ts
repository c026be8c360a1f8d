import { loadLuaScript, type LuaScript } from './scripts.js';

const lua = (file: string): LuaScript => loadLuaScript(new URL(`./lua/${file}`, import.meta.url));

/** Every lock script, loaded once per process (see each file's header for KEYS, ARGV and replies). */
export const LOCK_SCRIPTS = {
  mutexAcquire: lua('mutex-acquire.lua'),
  mutexRelease: lua('mutex-release.lua'),
  mutexExtend: lua('mutex-extend.lua'),
  reentrantAcquire: lua('reentrant-acquire.lua'),
  reentrantRelease: lua('reentrant-release.lua'),
  /** Also extends fair locks and the write side of read-write locks (a hash {owner: count}). */
  reentrantExtend: lua('reentrant-extend.lua'),
  /** inspect() of a mutex, reentrant or spin lock: lease, holder and its record in one step. */
  holderInspect: lua('holder-inspect.lua'),
  fairAcquire: lua('fair-acquire.lua'),
  fairRelease: lua('fair-release.lua'),
  fairLeave: lua('fair-leave.lua'),
  readAcquire: lua('rw-read-acquire.lua'),
  readRelease: lua('rw-read-release.lua'),
  readExtend: lua('rw-read-extend.lua'),
  readHoldCount: lua('rw-read-hold-count.lua'),
  readersInspect: lua('rw-readers-inspect.lua'),
  writeAcquire: lua('rw-write-acquire.lua'),
  writeRelease: lua('rw-write-release.lua'),
  writeIntentDrop: lua('rw-intent-drop.lua'),
  semaphoreAcquire: lua('semaphore-acquire.lua'),
  semaphoreRelease: lua('semaphore-release.lua'),
  semaphoreExtend: lua('semaphore-extend.lua'),
  semaphoreSetPermits: lua('semaphore-set-permits.lua'),
  counterSemaphoreAcquire: lua('counter-semaphore-acquire.lua'),
  counterSemaphoreRelease: lua('counter-semaphore-release.lua'),
  leasesInspect: lua('leases-inspect.lua'),
  latchSet: lua('latch-set.lua'),
  latchCountDown: lua('latch-count-down.lua'),
  forceUnlock: lua('force-unlock.lua'),
  electionLeader: lua('election-leader.lua'),
} as const;
