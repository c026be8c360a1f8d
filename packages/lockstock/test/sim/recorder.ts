import type { HistoryEvent } from '../../src/checker/index.js';
import type { LockHandle } from '../../src/index.js';
import type { Actor, Scheduler } from './scheduler.js';

interface OpenHold {
  readonly proc: string;
  readonly lock: string;
  readonly actor: Actor;
  readonly handle: LockHandle;
  ended: boolean;
}

/**
 * Writes the history the checker reads, in true virtual time (ns), never a client's skewed clock:
 * each process's acquire/release invocations and completions, `lost` when the client learned it lost
 * a hold — or, for a paused client, when its clock passed the hold's validity deadline (it cannot run
 * to hear of it: a client paused past its lease has lost the hold; a running one must learn it from
 * the core, whose signal aborts at that deadline, so a core that failed to tell would be caught) — and
 * `queued` when the store put a waiter in a fair queue, `offered` when the store granted it.
 */
export class Recorder {
  readonly events: HistoryEvent[] = [];
  private readonly open = new Set<OpenHold>();
  /** Each process's acquire in flight (a `queued` event is recorded only during one). */
  private readonly pending = new Map<string, string>();

  constructor(private readonly scheduler: Scheduler) {
    scheduler.beforeTask = () => this.expireUntrusted();
  }

  private get t(): number {
    return Math.round(this.scheduler.now * 1e6);
  }

  record(event: Omit<HistoryEvent, 't'>): void {
    this.events.push({ ...event, t: this.t } as HistoryEvent);
  }

  invokeAcquire(proc: string, lock: string, extra: Record<string, unknown>): void {
    this.pending.set(proc, lock);
    this.record({ type: 'invoke', proc, f: 'acquire', lock, ...extra });
  }

  completeAcquire(proc: string, type: 'ok' | 'fail' | 'info', extra: Record<string, unknown>): void {
    this.pending.delete(proc);
    this.record({ type, proc, f: 'acquire', lock: extra.lock, ...extra });
  }

  /** A granted hold: watched for its loss until released. */
  held(proc: string, lock: string, actor: Actor, handle: LockHandle): OpenHold {
    const hold: OpenHold = { proc, lock, actor, handle, ended: false };
    this.open.add(hold);
    handle.onLost(() => this.lost(hold));
    return hold;
  }

  released(hold: OpenHold): void {
    hold.ended = true;
    this.open.delete(hold);
  }

  queued(owner: string, lock: string): void {
    const proc = owner.slice(0, owner.lastIndexOf('.'));
    if (this.pending.get(proc) === lock) this.record({ type: 'ok', proc, f: 'queued', lock });
  }

  /** The store granted `owner` the lock, as the store saw it (the reply may never reach the owner). */
  offered(owner: string, lock: string): void {
    const proc = owner.slice(0, owner.lastIndexOf('.'));
    if (this.pending.get(proc) === lock) this.record({ type: 'ok', proc, f: 'offered', lock });
  }

  private lost(hold: OpenHold): void {
    if (hold.ended) return;
    hold.ended = true;
    this.open.delete(hold);
    this.record({ type: 'ok', proc: hold.proc, f: 'lost', lock: hold.lock });
  }

  /** Holds whose lease validity passed on their client's clock end now (see the class comment). */
  private expireUntrusted(): void {
    for (const hold of this.open) {
      // The core's hold (behind the caller's handle, core/handle.ts; a multi-lock's handle is its
      // own) keeps its lease (validity deadline on the client's monotonic clock).
      type Leased = { lease?: { validUntil: number } };
      const core = hold.handle as unknown as Leased & { hold?: Leased };
      const lease = (core.hold ?? core).lease;
      const { actor } = hold;
      if (!lease || actor.pausedUntil < this.scheduler.now) continue; // running: its own signal tells
      if (actor.localAt(this.scheduler.now) >= lease.validUntil) this.lost(hold);
    }
  }
}
