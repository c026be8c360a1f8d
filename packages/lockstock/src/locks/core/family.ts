/** The lock families: a module of its own that imports nothing, as kinds, the core and the SPI name them. */
/** The lock families a client offers; each backend says which it supports. */
export type LockFamily =
  | 'mutex'
  | 'reentrant'
  | 'fair'
  | 'spin'
  | 'read-write'
  | 'semaphore'
  | 'counter-semaphore'
  | 'latch'
  | 'election';

/** Every lock family, in the order reports list them (a backend's capabilities name its gaps). */
export const LOCK_FAMILIES: readonly LockFamily[] = [
  'mutex',
  'reentrant',
  'fair',
  'spin',
  'read-write',
  'semaphore',
  'counter-semaphore',
  'latch',
  'election',
];
