import {
  LockClientBase,
  type BackendCapabilities,
  type LockBackend,
  type LatchResource,
  type LockClientOptions,
  type LockResource,
} from '../backend/index.js';
import { InvalidLockOptionError } from '../locks/errors.js';
import { LocalExclusive, LocalFair, LocalResource } from './exclusive.js';
import { LocalRead, LocalSemaphore, LocalWrite } from './shared.js';
import { ANY, LocalStore } from './store.js';

export interface LocalLockClientOptions extends LockClientOptions {
  /**
   * Clients of one process with the same namespace share their locks (as code synchronizing on one
   * object shares its monitor); other namespaces and other processes see none of them.
   * @default 'default'
   */
  namespace?: string;
}

const LOCAL_CAPABILITIES: BackendCapabilities = Object.freeze({
  leases: 'renewable',
  fencing: 'counter',
  wakeUps: 'push',
  unsupported: Object.freeze({}),
  // Kept with each hold in memory: inspect().heldBy for every kind with holders.
  holderMetadata: Object.freeze([
    'mutex',
    'reentrant',
    'fair',
    'spin',
    'read-write',
    'semaphore',
    'counter-semaphore',
  ] as const),
});

/**
 * The in-process backend: Java's `synchronized` and `ReentrantLock`, with lockstock's API — every
 * family, leases (a hold can still be lost: an explicit lease ends, a renewal stops), fencing tokens,
 * wake-ups without polling. Its elections are the generic client's, over its mutex (readHolder). It protects nothing across processes or machines: that is its point in
 * the lab (in-process locks do not cross instances) and its use in single-process programs and tests.
 */
export class LocalBackend implements LockBackend {
  readonly name = 'local';
  readonly capabilities = LOCAL_CAPABILITIES;
  readonly store: LocalStore;

  constructor(namespace: string) {
    this.store = LocalStore.shared(namespace);
  }

  readonly subscribe = (channel: string, onWake: Parameters<LocalStore['subscribe']>[1]) =>
    Promise.resolve(this.store.subscribe(channel, onWake));

  mutex(name: string): LockResource {
    return new LocalExclusive(this.store, name, key('mutex', name), true);
  }

  reentrant(name: string): LockResource {
    return new LocalExclusive(this.store, name, key('reentrant', name), true);
  }

  fair(name: string): LockResource {
    return new LocalFair(this.store, name, key('fair', name));
  }

  spin(name: string): LockResource {
    return new LocalExclusive(this.store, name, key('spin', name), false);
  }

  readWrite(name: string): { read: LockResource; write: LockResource } {
    const state = key('read-write', name);
    return { read: new LocalRead(this.store, name, state), write: new LocalWrite(this.store, name, state) };
  }

  semaphore(name: string, permits: number): LockResource {
    return new LocalSemaphore(this.store, name, key('semaphore', name), permits, 'renewable');
  }

  counterSemaphore(name: string, permits: number): LockResource {
    return new LocalSemaphore(this.store, name, key('counter-semaphore', name), permits, 'none');
  }

  latch(name: string): LatchResource {
    return new LocalLatch(this.store, name);
  }

  async forceUnlock(made: LockResource | LatchResource): Promise<boolean> {
    if (made instanceof LocalResource) return made.forceUnlock();
    if (made instanceof LocalLatch) return made.reset();
    throw new InvalidLockOptionError('lock', 'a lock created by this client', made);
  }

  async close(): Promise<void> {
    // The store lives as long as the process; holds of this client end with their leases.
  }
}

/** Each family keeps its own state per name (a mutex and a semaphore named alike are two locks). */
const key = (family: string, name: string): string => `${family}\0${name}`;

/** Redisson's CountDownLatch in the store: the count down to zero publishes, waking every waiter. */
class LocalLatch implements LatchResource {
  readonly wakeChannel: string;
  private readonly key: string;

  constructor(
    private readonly store: LocalStore,
    readonly name: string,
  ) {
    this.key = key('latch', name);
    this.wakeChannel = `${this.key}:wake`;
  }

  async trySetCount(count: number): Promise<boolean> {
    const state = this.store.state(this.key);
    if (state.latch > 0) return false;
    state.latch = count;
    return true;
  }

  async countDown(): Promise<number> {
    const state = this.store.state(this.key);
    if (state.latch === 0) return 0;
    state.latch--;
    if (state.latch === 0) {
      this.store.tidy(this.key, state);
      this.store.publish(this.wakeChannel, ANY);
    }
    return state.latch;
  }

  async count(): Promise<number> {
    return this.store.state(this.key).latch;
  }

  reset(): boolean {
    const state = this.store.state(this.key);
    const counting = state.latch > 0;
    state.latch = 0;
    this.store.tidy(this.key, state);
    this.store.publish(this.wakeChannel, ANY);
    return counting;
  }
}

/**
 * Locks within one process (see LocalBackend): the same API as every other backend's client, for
 * single-process programs and tests, and as the lab's contrast.
 */
export class LocalLockClient extends LockClientBase<LocalBackend> {
  constructor(options: LocalLockClientOptions = {}) {
    const namespace = options.namespace ?? 'default';
    if (typeof namespace !== 'string' || namespace.length === 0) {
      throw new InvalidLockOptionError('namespace', 'a non-empty string', namespace);
    }
    super(() => new LocalBackend(namespace), options);
  }
}
