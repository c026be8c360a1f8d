import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

/** The lowest scheduling priority (the highest nice value) on Linux and macOS. */
export const LOWEST_PRIORITY = 19;

/**
 * Lowers the scheduling priority of the calling thread only (not of the process), where the system
 * allows it: on Linux a thread has its own nice value, set through its thread id, which
 * `/proc/thread-self` names. Returns whether it did; elsewhere nothing changes.
 *
 * The order thread calls it: on a machine whose cores are all busy, buyers waiting for an answer come
 * before orders waiting to be recorded (they wait in the Redis stream, and the thread catches up as
 * soon as a core is free). A lower priority only orders who runs first; it takes nothing away while
 * a core is idle.
 */
export function lowerThisThreadPriority(nice = LOWEST_PRIORITY): boolean {
  if (process.platform !== 'linux') return false;
  try {
    const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isSafeInteger(threadId) || threadId <= 0) return false;
    setPriority(threadId, nice);
    return true;
  } catch {
    return false; // no /proc, or a sandbox that forbids it: the thread keeps its priority
  }
}
