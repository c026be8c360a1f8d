import {
  BackendUnreachableError,
  type BackendCapabilities,
  type BackendHost,
  type LatchResource,
  type LockBackend,
  type LockResource,
  type Wake,
} from '../../src/backend/index.js';
import { SimLatch } from './latch.js';
import type { Rng } from './random.js';
import { SimExclusive, SimRead, SimSemaphore, SimWrite } from './resources.js';
import type { Actor, Scheduler } from './scheduler.js';
import type { SimStore } from './store.js';

/** The network between one client and the store, as the scheduler varies it. */
export interface Network {
  /** Each message (request, reply, wake-up) takes 0..maxDelayMs. */
  readonly maxDelayMs: number;
  /** A request or its reply is lost: the call fails after `timeoutMs` (BackendUnreachableError). */
  readonly lossRate: number;
  /** A wake-up arrives twice. */
  readonly duplicateRate: number;
  /** A wake-up is lost (lease mode only: a waiter then looks again when the holder's lease ends). */
  readonly wakeLossRate: number;
  readonly timeoutMs: number;
  /**
   * Requests (and replies) of one client may overtake each other, as on a pool of connections or
   * multiplexed streams; otherwise they keep their order, as on one TCP connection.
   */
  readonly reorders: boolean;
}

export const QUIET: Network = {
  maxDelayMs: 3,
  lossRate: 0,
  duplicateRate: 0,
  wakeLossRate: 0,
  timeoutMs: 200,
  reorders: false,
};

/**
 * How holds end without a release. 'lease': renewable leases the store expires (Redis-like; the
 * watchdog renews). 'session': no leases; a client session carries every hold and waiter place
 * (ZooKeeper-like), and ends with the connection: a lost reply, or a session-loss fault. The client
 * hears of the loss (sessionLost) before the store drops what the session held — the rule a session
 * backend keeps by timing out its client side before the server side (ZooKeeper: a disconnected
 * client gives its session up before the server can expire it).
 */
export type HoldMode = 'lease' | 'session';

/**
 * The simulated backend of one client: implements the published SPI (`lockstock/backend`) over the
 * shared SimStore, every call a request and a reply through a faulty network. Each family's store
 * logic is small and plain: the simulation is about the core that runs over it.
 */
export class SimBackend implements LockBackend {
  readonly name = 'sim';
  readonly capabilities: BackendCapabilities;
  /** The current session (session mode); a new one starts after each loss. */
  session: number;
  /** When the last request reaches the store, and the last reply the client (in-order delivery). */
  private requestsAt = 0;
  private repliesAt = 0;

  constructor(
    readonly host: BackendHost,
    readonly store: SimStore,
    readonly scheduler: Scheduler,
    readonly actor: Actor,
    readonly mode: HoldMode,
    readonly network: () => Network,
    private readonly rng: Rng,
    /** Mutex, reentrant, spin and semaphore resources take the core's hand-off offers (as Redis's). */
    readonly handsOff = false,
  ) {
    this.session = store.newSession();
    this.capabilities = {
      leases: mode === 'lease' ? 'renewable' : 'session',
      fencing: 'counter',
      wakeUps: 'push',
      // No election factory: the generic client's election runs over the mutex (its readHolder).
      unsupported: {},
    };
  }

  readonly subscribe = (channel: string, onWake: (wake: Wake) => void): Promise<() => void> => {
    const unsubscribe = this.store.subscribe(channel, (wake) => {
      const net = this.network();
      if (this.mode === 'lease' && this.rng.chance(net.wakeLossRate)) return;
      const copies = this.rng.chance(net.duplicateRate) ? 2 : 1;
      for (let i = 0; i < copies; i++) this.scheduler.after(this.delay(), this.actor, () => onWake(wake));
    });
    return new Promise((resolve) =>
      this.scheduler.after(this.delay(), this.actor, () => resolve(unsubscribe)),
    );
  };

  /** The store's fairness policy declines this hand-off (as Redis's 'yield' may): one in four. */
  declinesHandOff(): boolean {
    return this.rng.chance(0.25);
  }

  /** One request to the store and its reply; `apply` runs at the store, atomically. */
  call<T>(apply: (session: number) => T, lossy = true): Promise<T> {
    const { scheduler, actor } = this;
    const net = this.network();
    const session = this.session;
    const lost =
      lossy && this.rng.chance(net.lossRate) ? this.rng.pick(['request', 'reply'] as const) : undefined;
    return new Promise<T>((resolve, reject) => {
      const timedOut = () =>
        scheduler.after(net.timeoutMs, actor, () => {
          // The connection is gone: its session with it (session mode), the client first.
          if (this.mode === 'session') this.connectionLost(session);
          reject(new BackendUnreachableError('sim', 'sim-store', 'ETIMEDOUT', `${lost} lost`));
        });
      scheduler.at(this.inOrder('request'), undefined, () => {
        if (lost === 'request') return void timedOut();
        let outcome: { value: T } | { error: unknown };
        if (this.mode === 'session' && session !== this.session) {
          outcome = { error: new BackendUnreachableError('sim', 'sim-store', undefined, 'session expired') };
        } else {
          try {
            outcome = { value: apply(session) };
          } catch (error) {
            outcome = { error };
          }
        }
        if (lost === 'reply') return void timedOut();
        scheduler.at(this.inOrder('reply'), actor, () => {
          // A reply of a session the client has given up is not trusted (its holds are gone).
          if (this.mode === 'session' && session !== this.session) {
            reject(new BackendUnreachableError('sim', 'sim-store', undefined, 'session expired'));
          } else if ('value' in outcome) resolve(outcome.value);
          else reject(outcome.error as Error);
        });
      });
    });
  }

  /** The session `session` is lost (if still current): the client hears first, then the store drops it. */
  connectionLost(session = this.session): void {
    if (this.mode !== 'session' || session !== this.session) return;
    this.session = this.store.newSession();
    this.host.sessionLost(new BackendUnreachableError('sim', 'sim-store', undefined, 'session lost'));
    this.store.endSession(session, (key) => `${key}:wake`);
  }

  /** When a message sent now arrives: after its delay, and (unless reordering) after the last one. */
  private inOrder(direction: 'request' | 'reply'): number {
    const at = this.scheduler.now + this.delay();
    if (this.network().reorders) return at;
    if (direction === 'request') return (this.requestsAt = Math.max(this.requestsAt, at));
    return (this.repliesAt = Math.max(this.repliesAt, at));
  }

  private delay(): number {
    return this.rng.next() * this.network().maxDelayMs;
  }

  private leases(): 'renewable' | 'none' {
    return this.mode === 'lease' ? 'renewable' : 'none';
  }

  mutex(name: string): LockResource {
    return new SimExclusive(
      this,
      name,
      `mutex:${name}`,
      { wakes: true, fair: false, reentrant: false },
      this.leases(),
    );
  }
  reentrant(name: string): LockResource {
    return new SimExclusive(
      this,
      name,
      `reentrant:${name}`,
      { wakes: true, fair: false, reentrant: true },
      this.leases(),
    );
  }
  spin(name: string): LockResource {
    return new SimExclusive(
      this,
      name,
      `spin:${name}`,
      { wakes: false, fair: false, reentrant: true },
      this.leases(),
    );
  }
  fair(name: string): LockResource {
    return new SimExclusive(
      this,
      name,
      `fair:${name}`,
      { wakes: true, fair: true, reentrant: true },
      this.leases(),
    );
  }
  readWrite(name: string): { read: LockResource; write: LockResource } {
    const key = `rw:${name}`;
    return {
      read: new SimRead(this, name, key, this.leases()),
      write: new SimWrite(this, name, key, this.leases()),
    };
  }
  semaphore(name: string, permits: number): LockResource {
    return new SimSemaphore(this, name, `semaphore:${name}`, permits, this.leases());
  }
  counterSemaphore(name: string, permits: number): LockResource {
    return new SimSemaphore(this, name, `counter:${name}`, permits, 'none');
  }

  latch(name: string): LatchResource {
    return new SimLatch(this, name);
  }

  forceUnlock(_made: LockResource | LatchResource): Promise<boolean> {
    return Promise.resolve(false);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
