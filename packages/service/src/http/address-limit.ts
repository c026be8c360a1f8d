import { loadLuaScript, type ScriptRunner } from 'lockstock/redis';

const addressCountScript = loadLuaScript(new URL('./address-count.lua', import.meta.url));

/** How often a process adds its new counts to Redis and learns the others' (ms). */
export const ADDRESS_SYNC_MS = 100;

interface AddressWindow {
  /** Requests this process admitted from the address in the window. */
  local: number;
  /** Of those, the ones not yet added to the shared counter. */
  unsynced: number;
  /** Requests the other processes had admitted, as of this process's last reconciliation. */
  others: number;
}

/**
 * The per-address rate limit (requests per second per client address, on every route), counted in
 * each process's memory and reconciled through Redis every ADDRESS_SYNC_MS: a request costs no round
 * trip. Windows are the wall clock's seconds, so processes agree on them (to their clocks' skew).
 *
 * A process admits a request while what it admitted itself in the window, plus what the others had
 * admitted at its last reconciliation, is under the limit. So with N processes an address gets at most
 * `max` plus what it got from the other processes within one reconciliation interval (their counts
 * not yet seen) per window, and never more than N × max; with one process, or all of an address's
 * requests on one process (keep-alive connections stay on one), exactly `max`. While Redis cannot be
 * reached each process goes on limiting alone (the N × max bound), rather than refusing everyone.
 */
export class AddressLimiter {
  private window = -1;
  private counts = new Map<string, AddressWindow>();
  private timer: NodeJS.Timeout | undefined;
  private syncing: Promise<void> | undefined;

  constructor(
    private readonly scripts: ScriptRunner,
    private readonly options: {
      max: number;
      keyPrefix: string;
      /** The wall clock, ms (tests fix it). @default Date.now */
      now?: () => number;
      /** A reconciliation failed (Redis down): the process limits alone meanwhile. */
      onSyncError?: (error: unknown) => void;
    },
  ) {}

  /** Counts a request from `address`; false: over the limit (nothing counted). */
  admit(address: string): boolean {
    this.currentWindow();
    let entry = this.counts.get(address);
    if (!entry) {
      entry = { local: 0, unsynced: 0, others: 0 };
      this.counts.set(address, entry);
    }
    if (entry.local + entry.others >= this.options.max) return false;
    entry.local++;
    entry.unsynced++;
    return true;
  }

  /** Milliseconds until the current window ends (a refusal's Retry-After). */
  msLeft(): number {
    const now = (this.options.now ?? Date.now)();
    return 1000 - (now % 1000);
  }

  /** Reconciles every ADDRESS_SYNC_MS until stop(). */
  start(): void {
    this.timer ??= setInterval(() => {
      if (!this.syncing) {
        this.syncing = this.sync().finally(() => (this.syncing = undefined));
      }
    }, ADDRESS_SYNC_MS).unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.syncing;
  }

  /**
   * Adds this process's new counts of the current window to the shared counters and learns the other
   * processes' from their totals (one script call per address that sent something since the last
   * reconciliation; addresses this process is refusing have nothing new, and stay refused).
   */
  async sync(): Promise<void> {
    const window = this.currentWindow();
    const due = [...this.counts].filter(([, entry]) => entry.unsynced > 0);
    await Promise.all(
      due.map(async ([address, entry]) => {
        const delta = entry.unsynced;
        entry.unsynced = 0;
        try {
          const total = Number(
            await this.scripts.run(addressCountScript, [this.key(address, window)], [delta, 2000]),
          );
          // The window may have turned meanwhile: its entries are gone and nothing is learnt.
          if (this.window === window) entry.others = Math.max(0, total - entry.local + entry.unsynced);
        } catch (error) {
          if (this.window === window) entry.unsynced += delta; // added at the next reconciliation
          this.options.onSyncError?.(error);
        }
      }),
    );
  }

  private currentWindow(): number {
    const window = Math.floor((this.options.now ?? Date.now)() / 1000);
    if (window !== this.window) {
      this.window = window;
      this.counts = new Map();
    }
    return window;
  }

  private key(address: string, window: number): string {
    return `${this.options.keyPrefix}:rl:ip:${address}:${window}`;
  }
}
