/**
 * What the store answered a waiter, seen at the SPI: a rule about waiters (who is queued first, whether
 * a waiting writer keeps readers out) is judged from when the store refused each one's waiting try —
 * the try that queues it — not from when the test believes it started waiting.
 */
import { Busy, type AttemptResult, type LockResource } from '../../locks/core/backend.js';
import type { LockClientBase } from '../../locks/core/client.js';
import type { LockClient } from '../../locks/types.js';

/** Calls `refused(owner)` whenever `resource` refuses a waiting try of `owner` (the resource is kept). */
function watchResource(resource: LockResource, refused: (owner: string) => void): LockResource {
  const attempt = resource.attempt.bind(resource);
  // An own property over the prototype's method: the resource stays the same object for its backend.
  Object.assign(resource, {
    attempt: async (...args: Parameters<LockResource['attempt']>): Promise<AttemptResult> => {
      const result = await attempt(...args);
      if (result instanceof Busy && args[0].waiting) refused(args[0].owner);
      return result;
    },
  });
  return resource;
}

/**
 * Reports the waiting tries `client`'s locks of `family` are refused (both sides of a read-write
 * lock). Call it before the client makes such a lock. False when the client is no LockClientBase or
 * its backend has no such factory: the store's answers cannot be seen then.
 */
export function observeRefusals(
  client: LockClient,
  family: 'fair' | 'readWrite',
  refused: (owner: string) => void,
): boolean {
  const backend = (client as Partial<LockClientBase>).backend;
  if (!backend) return false;
  if (family === 'fair') {
    const fair = backend.fair?.bind(backend);
    if (!fair) return false;
    backend.fair = (name: string) => watchResource(fair(name), refused);
    return true;
  }
  const readWrite = backend.readWrite?.bind(backend);
  if (!readWrite) return false;
  backend.readWrite = (name: string) => {
    const sides = readWrite(name);
    return { read: watchResource(sides.read, refused), write: watchResource(sides.write, refused) };
  };
  return true;
}
