import { describe, expect, it } from 'vitest';
import {
  LockBackendError,
  LockLostError,
  UnsupportedLockKindError,
  type LockLostReason,
} from '../../src/index.js';
import {
  Busy,
  Granted,
  LockClientBase,
  type AttemptRequest,
  type BackendHost,
  type LockBackend,
  type LockResource,
  type Watch,
} from '../../src/backend/index.js';

/**
 * The SPI's own promises, on a store kept in this process: holds that end with a session are all
 * lost when the backend reports the session lost, a refusal's watch wakes the waiter (no polling), and
 * a family the backend does not offer is refused at the factory with the backend's reason.
 */
class SessionStore {
  holder: string | undefined;
  token = 0;
  attempts = 0;
  private freed: (() => void) | undefined;

  watch(): Watch {
    const changed = new Promise<void>((resolve) => (this.freed = resolve));
    return { changed, cancel: () => (this.freed = undefined) };
  }

  free(): void {
    this.holder = undefined;
    this.freed?.();
  }
}

class SessionMutex implements LockResource {
  readonly waitKey = 'm';
  readonly wakeChannel = undefined;
  readonly leases = 'none' as const;
  readonly handsOff = false;
  constructor(
    private readonly store: SessionStore,
    readonly name: string,
  ) {}
  async attempt({ owner, waiting }: AttemptRequest) {
    this.store.attempts++;
    // A caller that will not wait (the first, fast try) gets no watch: nobody would cancel it.
    if (this.store.holder !== undefined) return new Busy(undefined, waiting ? this.store.watch() : undefined);
    this.store.holder = owner;
    return new Granted(++this.store.token, false);
  }
  async release(owner: string) {
    if (this.store.holder !== owner) return { outcome: 'expired' as const };
    this.store.free();
    return { outcome: 'released' as const };
  }
  async extend() {
    return 'expired' as const;
  }
  async inspect() {
    const held = this.store.holder !== undefined;
    return { held, holders: held ? 1 : 0, remainingMs: undefined };
  }
  leave(): void {}
}

class SessionBackend implements LockBackend {
  readonly name = 'session-test';
  readonly capabilities = {
    leases: 'session',
    fencing: 'counter',
    wakeUps: 'watch',
    unsupported: { 'read-write': 'no shared holds in this store' },
  } as const;
  readonly store = new SessionStore();
  constructor(readonly host: BackendHost) {}
  mutex(name: string) {
    return new SessionMutex(this.store, name);
  }
  async forceUnlock() {
    this.store.free();
    return true;
  }
  async close() {}
}

/**
 * A store that queues every waiter itself ('server-order', as ZooKeeper's nodes do): a waiting try
 * takes a place at the back of the queue (kept until granted or left), the head holds, the others
 * watch. `failAfterQueueing` makes the next try fail once it has queued its caller (a lost answer).
 */
class QueueStore {
  readonly queue: string[] = [];
  readonly tries: Array<{ owner: string; waiting: boolean }> = [];
  failAfterQueueing = false;
  token = 0;
  private readonly changed = new Set<() => void>();

  watch(): Watch {
    let wake!: () => void;
    const changed = new Promise<void>((resolve) => (wake = resolve));
    this.changed.add(wake);
    return { changed, cancel: () => this.changed.delete(wake) };
  }

  remove(owner: string): void {
    const at = this.queue.indexOf(owner);
    if (at < 0) return;
    this.queue.splice(at, 1);
    for (const wake of this.changed) wake();
    this.changed.clear();
  }
}

class QueueMutex implements LockResource {
  readonly waitKey = 'q';
  readonly wakeChannel = undefined;
  readonly leases = 'none' as const;
  readonly handsOff = false;
  readonly ordering = 'server-order' as const;
  constructor(
    private readonly store: QueueStore,
    readonly name: string,
  ) {}
  async attempt({ owner, waiting }: AttemptRequest) {
    const { store } = this;
    store.tries.push({ owner, waiting });
    if (!store.queue.includes(owner)) {
      if (store.queue.length > 0 && !waiting) return new Busy(undefined);
      store.queue.push(owner);
    }
    if (store.failAfterQueueing) {
      store.failAfterQueueing = false;
      throw new Error('the answer was lost');
    }
    if (store.queue[0] === owner) return new Granted(++store.token, false);
    return new Busy(undefined, store.watch());
  }
  async release(owner: string) {
    if (this.store.queue[0] !== owner) return { outcome: 'expired' as const };
    this.store.remove(owner);
    return { outcome: 'released' as const };
  }
  async extend() {
    return 'expired' as const;
  }
  async inspect() {
    const held = this.store.queue.length > 0;
    return { held, holders: held ? 1 : 0, remainingMs: undefined };
  }
  leave(owner: string, won: boolean): void {
    if (!won) this.store.remove(owner);
  }
}

class QueueBackend implements LockBackend {
  readonly name = 'queue-test';
  readonly capabilities = {
    leases: 'session',
    fencing: 'counter',
    wakeUps: 'watch',
    unsupported: {},
  } as const;
  readonly store = new QueueStore();
  constructor(readonly host: BackendHost) {}
  mutex(name: string) {
    return new QueueMutex(this.store, name);
  }
  async forceUnlock() {
    return false;
  }
  async close() {}
}

/**
 * A store with one session per hold (a database connection pinned to each, as PostgreSQL's backend
 * does): every grant carries the end of its own session, which the test triggers by lock name.
 */
class PerHoldBackend implements LockBackend {
  readonly name = 'per-hold-test';
  readonly capabilities = {
    leases: 'session',
    fencing: 'counter',
    wakeUps: 'backoff',
    unsupported: {},
  } as const;
  readonly endSession = new Map<string, (reason: LockLostReason) => void>();
  private token = 0;
  mutex(name: string): LockResource {
    const sessions = this.endSession;
    const next = () => ++this.token;
    return {
      name,
      waitKey: name,
      wakeChannel: undefined,
      leases: 'none',
      handsOff: false,
      async attempt() {
        const lost = new Promise<LockLostReason>((resolve) => sessions.set(name, resolve));
        return new Granted(next(), false, lost);
      },
      async release() {
        return { outcome: 'released' as const };
      },
      async extend() {
        return 'expired' as const;
      },
      async inspect() {
        return { held: false, holders: 0, remainingMs: undefined };
      },
      leave() {},
    };
  }
  async forceUnlock() {
    return false;
  }
  async close() {}
}

describe('the backend SPI', () => {
  it("a lost session loses every hold it carried at once: signals abort with 'session_lost'", async () => {
    const client = new LockClientBase((host) => new SessionBackend(host));
    const hold = await client.mutex('a').acquire();
    expect(hold.leaseMs).toBeUndefined();
    const lost = new Promise<LockLostError>((resolve) => hold.onLost(resolve));
    client.backend.host.sessionLost(new Error('session expired'));
    const error = await lost;
    expect(error.reason).toBe('session_lost');
    expect(hold.signal.aborted).toBe(true);
    expect((hold.signal.reason as LockLostError).reason).toBe('session_lost');
    await client.close();
  });

  it('a released hold is not lost with the session afterwards', async () => {
    const client = new LockClientBase((host) => new SessionBackend(host));
    const hold = await client.mutex('a').acquire();
    await hold.release();
    client.backend.host.sessionLost();
    expect(hold.lostError).toBeUndefined();
    await client.close();
  });

  it("a grant's own session ending (Granted.lost) loses that hold alone, at once", async () => {
    const client = new LockClientBase(() => new PerHoldBackend());
    const [a, b] = await Promise.all([client.mutex('a').acquire(), client.mutex('b').acquire()]);
    const lost = new Promise<LockLostError>((resolve) => a.onLost(resolve));
    client.backend.endSession.get('a')?.('session_lost');
    expect((await lost).reason).toBe('session_lost');
    expect(a.signal.aborted).toBe(true);
    expect(b.signal.aborted).toBe(false);
    // A hold released before its session ends is not lost afterwards.
    expect(await b.release()).toBe('released');
    client.backend.endSession.get('b')?.('session_lost');
    await Promise.resolve();
    expect(b.lostError).toBeUndefined();
    await client.close();
  });

  it("a refusal's watch wakes the waiter: one try when woken, none while it waits", async () => {
    const client = new LockClientBase((host) => new SessionBackend(host));
    const lock = client.mutex('a');
    const first = await lock.acquire();
    const before = client.backend.store.attempts;
    const waiting = lock.acquire({ waitMs: 10_000 });
    // A fast try, then the waiting try that set the watch; nothing more until the release.
    await expect.poll(() => client.backend.store.attempts).toBe(before + 2);
    await new Promise((resolve) => setTimeout(resolve, 50)); // time in which a poller would retry
    expect(client.backend.store.attempts).toBe(before + 2);
    await first.release();
    const second = await waiting;
    expect(client.backend.store.attempts).toBe(before + 3);
    expect(second.fencingToken).toBe(first.fencingToken + 1);
    await second.release();
    await client.close();
  });

  it('server-ordered: a caller that will wait queues from its first try and keeps that place', async () => {
    const client = new LockClientBase((host) => new QueueBackend(host));
    const { store } = client.backend;
    const first = await client.mutex('q').acquire({ owner: 'a' });
    const waiting = client.mutex('q').acquire({ owner: 'b', waitMs: 10_000 });
    await expect.poll(() => store.queue).toEqual(['a', 'b']);
    // One try, a waiting one, and the waiter sleeps on its watch: it queued once, at once.
    expect(store.tries.filter((t) => t.owner === 'b')).toEqual([{ owner: 'b', waiting: true }]);
    // A try that will not wait does not queue.
    expect(await client.mutex('q').tryAcquire({ owner: 'c' })).toBeUndefined();
    expect(store.queue).toEqual(['a', 'b']);
    await first.release();
    const second = await waiting;
    expect(store.tries.filter((t) => t.owner === 'b')).toHaveLength(2); // woken once, granted
    await second.release();
    await client.close();
  });

  it('server-ordered: a first waiting try that fails after queueing its caller leaves the queue', async () => {
    const client = new LockClientBase((host) => new QueueBackend(host));
    const { store } = client.backend;
    const held = await client.mutex('q').acquire({ owner: 'a' });
    store.failAfterQueueing = true;
    await expect(client.mutex('q').acquire({ owner: 'b', waitMs: 10_000 })).rejects.toBeInstanceOf(
      LockBackendError,
    );
    expect(store.queue).toEqual(['a']); // b's place did not outlive its failed acquire
    await held.release();
    await client.close();
  });

  it('a family the backend does not offer is refused at the factory, with its reason', async () => {
    const client = new LockClientBase((host) => new SessionBackend(host));
    expect(() => client.readWrite('rw')).toThrow(UnsupportedLockKindError);
    expect(() => client.readWrite('rw')).toThrow('no shared holds in this store');
    expect(() => client.semaphore('s', { permits: 2 })).toThrow('not implemented by this backend');
    await client.close();
  });
});
