import { Busy, monotonicNow } from '../../src/backend/index.js';
import type { CountDownLatch } from '../../src/index.js';
import type { SimBackend } from './backend.js';

const RELEASED = { value: true, more: true } as const;
const RECHECK_MS = 250;
const RECHECK = new Busy(RECHECK_MS);

/**
 * A count-down latch in the simulated store, waited for through the core's wait loop (BackendHost's
 * waiters), as a third-party backend builds one: a wait tries, and tries again on each wake-up.
 * The store remembers when the count reached zero (`zeroAt`), the latch check's reference.
 */
export class SimLatch implements CountDownLatch {
  private readonly key: string;
  private readonly channel: string;

  constructor(
    private readonly backend: SimBackend,
    readonly name: string,
  ) {
    this.key = `latch:${name}`;
    this.channel = `${this.key}:wake`;
  }

  trySetCount(count: number): Promise<boolean> {
    return this.backend.call(() => {
      const state = this.backend.store.state(this.key);
      if ((state.permits ?? 0) > 0) return false;
      state.permits = count;
      return true;
    });
  }

  countDown(): Promise<number> {
    return this.backend.call(() => {
      const { store } = this.backend;
      const state = store.state(this.key);
      if ((state.permits ?? 0) === 0) return 0;
      state.permits = state.permits! - 1;
      if (state.permits === 0) {
        store.latchZeroAt ??= store.now();
        store.publish(this.channel, { to: 'any' });
      }
      return state.permits;
    });
  }

  count(): Promise<number> {
    return this.backend.call(() => {
      const { store } = this.backend;
      const left = store.state(this.key).permits ?? 0;
      return store.mutations.latchOffByOne && left === 1 ? 0 : left;
    });
  }

  async wait(options: { waitMs?: number; signal?: AbortSignal } = {}): Promise<boolean> {
    const { host } = this.backend;
    const waitMs = options.waitMs ?? Infinity;
    const startedAt = monotonicNow();
    if ((await this.count()) === 0) return true;
    const released = await host.waiters.wait<true, undefined>({
      key: this.key,
      lockName: this.name,
      channel: this.channel,
      ordering: 'server-order', // every waiter tries on each wake-up: all are released at zero
      owner: '',
      ticket: undefined,
      // Wake-ups may be lost (lease mode): a waiter looks again every RECHECK_MS meanwhile.
      attempt: async () => ((await this.count()) === 0 ? RELEASED : RECHECK),
      deadline: waitMs === Infinity ? Infinity : startedAt + waitMs,
      signal: options.signal,
      abandon: () => undefined,
      heldUntil: () => Infinity,
      leave: () => undefined,
    });
    return released === true;
  }
}
