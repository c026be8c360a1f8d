import { readdirSync, readFileSync } from 'node:fs';

const pauseCell = new Int32Array(new SharedArrayBuffer(4));

/** The scheduler state letter of one thread (`R`, `S`, `T`, …), or undefined when it is gone. */
function threadState(pid: number, tid: string): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    // "tid (comm) S …": comm may hold spaces and parentheses, so read after the last ')'.
    return stat[stat.lastIndexOf(')') + 2];
  } catch {
    return undefined;
  }
}

function allThreadsStopped(pid: number): boolean {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return true; // gone (or no /proc): nothing is left to answer
  }
  return tids.every((tid) => {
    const state = threadState(pid, tid);
    return state === undefined || state === 'T' || state === 't' || state === 'Z' || state === 'X';
  });
}

/**
 * Sends SIGSTOP to `pid` and returns once every one of its threads is stopped. kill(2) only queues
 * the signal: on a busy machine a multi-threaded server (etcd, ZooKeeper's JVM) was seen to answer a
 * request sent after kill() had returned (29 of 300 tries with both cores loaded), so "paused" is
 * confirmed from /proc before the caller goes on. Waits at most `timeoutMs` (then returns anyway:
 * a thread stuck in uninterruptible sleep stops when it wakes). Synchronous on purpose, so that
 * pause() stays a plain call.
 */
export function freezeProcess(pid: number, timeoutMs = 2_000): void {
  process.kill(pid, 'SIGSTOP');
  const deadline = performance.now() + timeoutMs;
  while (!allThreadsStopped(pid) && performance.now() < deadline) Atomics.wait(pauseCell, 0, 0, 1);
}
