import type { Etcd3 } from 'etcd3';
import { LockClientBase } from '../backend/index.js';
import { InvalidLockOptionError } from '../locks/errors.js';
import type { LockHandle, Term } from '../locks/types.js';
import { EtcdBackend, type EtcdLockClientOptions } from './backend.js';

/**
 * Locks of every kind on etcd (3.4+), the one lock API on Go's concurrency recipes: a session (one
 * lease, kept alive) carries every hold of the client and reports its loss to each hold's signal;
 * waiters queue in revision order and each watches the key before its own; a hold's fencing token is
 * its key's create revision (strictly increasing per lock, not consecutive). Holds have no lease of
 * their own: `leaseMs` is refused; `sessionTtlSeconds` bounds how long a dead client keeps its locks.
 * A thin shell over the generic client and the etcd backend.
 */
export class EtcdLockClient extends LockClientBase<EtcdBackend> {
  constructor(options: EtcdLockClientOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new InvalidLockOptionError('hosts', 'etcd URLs, or `etcd`: an Etcd3 client', options);
    }
    super((host) => new EtcdBackend(options, host), options);
  }

  /** The etcd3 client the locks run on. */
  get etcd(): Etcd3 {
    return this.backend.etcd;
  }

  /** The current session's lease id (decimal), if a session is open; every lock key is on it. */
  get sessionLeaseId(): string | undefined {
    return this.backend.sessionLeaseId;
  }

  /**
   * A fenced write in etcd itself: puts `value` at `key` only while `holder` (a hold or a term of this
   * client) still holds — one transaction, `If(CreateRevision(lock key) == fencingToken)`. False when
   * etcd refused it (the hold's key is gone: its session ended, a forceUnlock) or when this client has
   * no such hold (released).
   */
  guardedPut(holder: LockHandle | Term, key: string, value: string): Promise<boolean> {
    return this.backend.guardedPut(holder, key, value);
  }
}
