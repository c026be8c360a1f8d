/**
 * `lockstock/local` — the in-process backend: every lock family within one process (Java's
 * `synchronized` / `ReentrantLock` with lockstock's API). It protects nothing across processes.
 *
 * @module lockstock/local
 */
export { LocalBackend, LocalLockClient, type LocalLockClientOptions } from './client.js';
