/**
 * `lockstock/etcd` — the lock API on etcd (issue 24): every family but the counter semaphore, each
 * hold carried by the client's session (one lease, kept alive), waiters queued in revision order with
 * a watch on the key before their own, fencing tokens from create revisions, guarded writes
 * (`guardedPut`). Needs the `etcd3` package (an optional peer dependency), loaded when a client is made.
 *
 * @module lockstock/etcd
 */
export { EtcdLockClient } from './client.js';
export { EtcdBackend, type EtcdLockClientOptions } from './backend.js';
export { EtcdSessionEndedError, type SessionEnd } from './session.js';
