import type { LatchResource, Watch } from '../../src/backend/index.js';
import type { SimBackend } from './backend.js';

const RECHECK_MS = 250;

/**
 * A count-down latch in the simulated store, as a third-party backend builds one: the store's part
 * (LatchResource); the core's wait loop reads the count again on each wake-up and each watch.
 * The store remembers when the count reached zero (`zeroAt`), the latch check's reference.
 */
export class SimLatch implements LatchResource {
  private readonly key: string;
  readonly wakeChannel: string;

  constructor(
    private readonly backend: SimBackend,
    readonly name: string,
  ) {
    this.key = `latch:${name}`;
    this.wakeChannel = `${this.key}:wake`;
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
        store.publish(this.wakeChannel, { to: 'any' });
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

  /**
   * Wake-ups may be lost (lease mode): besides the channel, a waiter looks again every RECHECK_MS,
   * by a watch that is only a timer (the SPI's watch, as a store without one polls).
   */
  async watchCount(): Promise<Watch | undefined> {
    if ((await this.count()) === 0) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const changed = new Promise<void>((resolve) => (timer = setTimeout(resolve, RECHECK_MS)));
    return { changed, cancel: () => clearTimeout(timer) };
  }
}
