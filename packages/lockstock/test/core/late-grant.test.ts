import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import {
  Busy,
  Granted,
  LockClientBase,
  type AttemptRequest,
  type BackendHost,
  type ExtendStatus,
  type LockBackend,
  type LockResource,
} from '../../src/backend/index.js';

/**
 * A grant whose answer comes after its lease could be trusted (core/lock.ts, confirmLateGrant). The
 * store is kept in this process with leases on its own clock, and the first attempt is slowed on
 * one side of the store: before it (the request is late: the store's lease is fresh when the answer
 * arrives) or after it (the answer is late: the store's lease ran out meanwhile). What the store
 * was asked — attempts, extends, releases — is counted by the store, not by the client.
 */
const LEASE_MS = 1_000;
const SLOW_MS = 1_200; // more than the lease: the client cannot trust the grant when it hears of it
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

class LeaseStore {
  holder: { owner: string; until: number } | undefined;
  token = 0;
  readonly calls = { attempt: 0, extend: 0, release: 0 };
  /** Where the first attempt is slowed, if at all. */
  slow: 'request' | 'answer' | undefined;

  held(owner?: string): boolean {
    if (this.holder && this.holder.until <= performance.now()) this.holder = undefined;
    return this.holder !== undefined && (owner === undefined || this.holder.owner === owner);
  }
}

class LeaseMutex implements LockResource {
  readonly waitKey = 'm';
  readonly wakeChannel = undefined;
  readonly leases = 'renewable' as const;
  readonly handsOff = false;
  constructor(
    private readonly store: LeaseStore,
    readonly name: string,
  ) {}
  async attempt({ owner, leaseMs }: AttemptRequest) {
    const { store } = this;
    const slow = store.calls.attempt++ === 0 ? store.slow : undefined;
    if (slow === 'request') await sleep(SLOW_MS);
    if (store.held()) return new Busy(50);
    store.holder = { owner, until: performance.now() + (leaseMs ?? LEASE_MS) };
    const granted = new Granted(++store.token, false);
    if (slow === 'answer') await sleep(SLOW_MS);
    return granted;
  }
  async release(owner: string) {
    this.store.calls.release++;
    if (!this.store.held(owner)) return { outcome: 'expired' as const };
    this.store.holder = undefined;
    return { outcome: 'released' as const };
  }
  async extend(owner: string, leaseMs: number): Promise<ExtendStatus> {
    this.store.calls.extend++;
    if (!this.store.held(owner)) return 'expired';
    this.store.holder!.until = performance.now() + leaseMs;
    return 'extended';
  }
  async inspect() {
    const held = this.store.held();
    return { held, holders: held ? 1 : 0, remainingMs: undefined };
  }
  leave(): void {}
}

class LeaseBackend implements LockBackend {
  readonly name = 'lease-test';
  readonly capabilities = {
    leases: 'renewable',
    fencing: 'counter',
    wakeUps: 'backoff',
    unsupported: {},
  } as const;
  constructor(readonly store: LeaseStore) {}
  mutex(name: string): LockResource {
    return new LeaseMutex(this.store, name);
  }
  async forceUnlock(): Promise<boolean> {
    return false;
  }
  async close(): Promise<void> {}
}

class LeaseClient extends LockClientBase<LeaseBackend> {
  constructor(store: LeaseStore) {
    super((_host: BackendHost) => new LeaseBackend(store), { watchdogTimeoutMs: LEASE_MS });
  }
}

describe('a grant answered after its lease could be trusted', () => {
  const clients: LeaseClient[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });

  it('is kept when the store still holds it for the owner: confirmed by an extend, never given back', async () => {
    const store = new LeaseStore();
    store.slow = 'request';
    const client = new LeaseClient(store);
    clients.push(client);
    const hold = await client.mutex('late').acquire({ leaseMs: LEASE_MS });
    // One grant, the first: the waiter kept it (a fair waiter keeps its place in the store's queue).
    expect(hold.fencingToken).toBe(1);
    expect(store.calls).toEqual({ attempt: 1, extend: 1, release: 0 });
    expect(store.held(hold.owner)).toBe(true);
    expect(hold.signal.aborted).toBe(false);
    await hold.release();
  });

  it('is not trusted when the store let it go meanwhile: tried again, nothing to give back', async () => {
    const store = new LeaseStore();
    store.slow = 'answer';
    const client = new LeaseClient(store);
    clients.push(client);
    const hold = await client.mutex('lapsed').acquire({ leaseMs: LEASE_MS });
    expect(hold.fencingToken).toBe(2); // the second grant: the first lapsed before it was heard of
    expect(store.calls).toEqual({ attempt: 2, extend: 1, release: 0 });
    expect(store.held(hold.owner)).toBe(true);
    await hold.release();
  });
});
