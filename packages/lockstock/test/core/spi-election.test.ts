import { describe, expect, it } from 'vitest';
import { UnsupportedLockKindError, type Leader } from '../../src/index.js';
import {
  Busy,
  Granted,
  LockClientBase,
  type AttemptRequest,
  type LockBackend,
  type LockHolder,
  type LockResource,
  type Watch,
} from '../../src/backend/index.js';
import { LocalLockClient } from '../../src/local/index.js';

/**
 * Elections on a backend that has no election of its own (a third party's): the generic client runs
 * one over its mutex when the mutex answers readHolder(), and refuses with a reason when it cannot.
 */
class Store {
  readonly holders = new Map<string, LockHolder>();
  private token = 0;
  private readonly freed = new Map<string, Set<() => void>>();

  take(name: string, owner: string): number {
    this.holders.set(name, { owner, fencingToken: ++this.token });
    return this.token;
  }

  free(name: string): void {
    this.holders.delete(name);
    for (const wake of this.freed.get(name) ?? []) wake();
    this.freed.delete(name);
  }

  watch(name: string): Watch {
    let wake!: () => void;
    const changed = new Promise<void>((resolve) => (wake = resolve));
    const waiting = this.freed.get(name) ?? new Set();
    this.freed.set(name, waiting.add(wake));
    return { changed, cancel: () => waiting.delete(wake) };
  }
}

function mutex(store: Store, name: string, answersHolder: boolean): LockResource {
  const resource: LockResource = {
    name,
    waitKey: name,
    wakeChannel: undefined,
    leases: 'none',
    handsOff: false,
    async attempt({ owner, waiting }: AttemptRequest) {
      const held = store.holders.get(name);
      if (held?.owner === owner) return new Granted(held.fencingToken, false);
      if (held) return new Busy(undefined, waiting ? store.watch(name) : undefined);
      return new Granted(store.take(name, owner), false);
    },
    async release(owner: string) {
      if (store.holders.get(name)?.owner !== owner) return { outcome: 'expired' as const };
      store.free(name);
      return { outcome: 'released' as const };
    },
    async extend() {
      return 'expired' as const;
    },
    async inspect() {
      const held = store.holders.has(name);
      return { held, holders: held ? 1 : 0, remainingMs: undefined };
    },
    leave() {},
  };
  if (answersHolder) resource.readHolder = async () => store.holders.get(name);
  return resource;
}

class ThirdPartyBackend implements LockBackend {
  readonly name = 'third-party';
  readonly capabilities = {
    leases: 'session',
    fencing: 'counter',
    wakeUps: 'watch',
    unsupported: {},
  } as const;
  constructor(
    readonly store: Store,
    private readonly answersHolder: boolean,
  ) {}
  mutex(name: string): LockResource {
    return mutex(this.store, name, this.answersHolder);
  }
  async forceUnlock(made: LockResource) {
    const held = this.store.holders.has(made.name);
    this.store.free(made.name);
    return held;
  }
  async close() {}
}

describe('elections on any backend', () => {
  it("a backend without an election factory gets the generic client's, over its mutex", async () => {
    const store = new Store();
    const a = new LockClientBase(() => new ThirdPartyBackend(store, true));
    const b = new LockClientBase(() => new ThirdPartyBackend(store, true));
    const seen: Array<Leader | undefined> = [];
    const stop = b.election('jobs').observe((leader) => seen.push(leader), { intervalMs: 10 });

    expect(await a.election('jobs').leader()).toBeUndefined();
    const first = await a.election('jobs').campaign('host-a');
    // Both contenders started before either is awaited: b waits for a's term to end.
    const second = b.election('jobs').campaign('host-b', { waitMs: 10_000 });
    expect(await b.election('jobs').leader()).toEqual({ value: 'host-a', fencingToken: first.fencingToken });
    // The election's lock is its own: a mutex of the same name is free.
    expect(await (await a.mutex('jobs').acquire()).release()).toBe('released');
    // The leader's value is read from the holder (readHolder), in the documented owner format.
    expect(store.holders.get('election:jobs')?.owner).toMatch(/\|host-a$/);

    await expect.poll(() => seen.at(-1)?.value).toBe('host-a'); // the observer saw the first term

    await first.resign();
    const term = await second;
    expect(term.value).toBe('host-b');
    expect(term.fencingToken).toBeGreaterThan(first.fencingToken);
    expect(await a.election('jobs').leader()).toEqual({ value: 'host-b', fencingToken: term.fencingToken });
    await expect.poll(() => seen.at(-1)?.value).toBe('host-b');
    stop();
    await term.resign();
    expect(await a.election('jobs').leader()).toBeUndefined();
    await Promise.all([a.close(), b.close()]);
  });

  it('a backend whose locks cannot tell their holder has no election: refused at the factory, with why', async () => {
    const client = new LockClientBase(() => new ThirdPartyBackend(new Store(), false));
    expect(() => client.election('jobs')).toThrow(UnsupportedLockKindError);
    expect(() => client.election('jobs')).toThrow('readHolder()');
    await client.close();
  });

  it('the local backend runs its elections on the default, over its mutex', async () => {
    const a = new LocalLockClient({ namespace: 'spi-election' });
    const b = new LocalLockClient({ namespace: 'spi-election' });
    const term = await a.election('e').campaign('one');
    expect(await b.election('e').leader()).toEqual({ value: 'one', fencingToken: term.fencingToken });
    expect(
      await b
        .election('e')
        .campaign('two', { waitMs: 0 })
        .catch((e: Error) => e.name),
    ).toBe('LockTimeoutError');
    await term.resign();
    expect(await b.election('e').leader()).toBeUndefined();
    await Promise.all([a.close(), b.close()]);
  });
});

describe("available() from the store's count", () => {
  it("a semaphore's available() follows a count another client stored (local backend)", async () => {
    const a = new LocalLockClient({ namespace: 'spi-available' });
    const b = new LocalLockClient({ namespace: 'spi-available' });
    const hold = await a.semaphore('pool', { permits: 3 }).acquire();
    expect(await b.semaphore('pool', { permits: 3 }).available()).toBe(2);
    await a.semaphore('pool', { permits: 3 }).setPermits(5);
    // b was configured with 3, the store now keeps 5: 4 are free, not 2.
    expect(await b.semaphore('pool', { permits: 3 }).available()).toBe(4);
    await hold.release();
    await Promise.all([a.close(), b.close()]);
  });
});
