import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';

/**
 * Node has no threads, so "the same thread re-enters" (Java's reentrancy) becomes "the same logical
 * task re-enters": `Lock.run()` opens a task whose async context carries an owner id, and a reentrant
 * lock acquired anywhere inside that context (across awaits) re-enters under that owner. Code outside
 * any task gets a fresh owner per acquire, i.e. no accidental re-entry between unrelated requests.
 */
const taskOwner = new AsyncLocalStorage<string>();

/** A process-unique prefix; owner ids are `<prefix>:<counter>`, unique across machines and restarts. */
const processPrefix = randomBytes(9).toString('base64url');
let counter = 0;

/** A new owner id, unique across processes and machines: `<process prefix>:<counter>` (never a `|`). */
export function newOwnerId(): string {
  return `${processPrefix}:${++counter}`;
}

export function currentTaskOwner(): string | undefined {
  return taskOwner.getStore();
}

/** Runs `fn` as a task owned by the current task's owner, or by a new owner if there is none. */
export function runInTask<T>(fn: (owner: string) => T): T {
  const existing = taskOwner.getStore();
  if (existing !== undefined) return fn(existing);
  const owner = newOwnerId();
  return taskOwner.run(owner, () => fn(owner));
}
