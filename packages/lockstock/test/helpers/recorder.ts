import type { HistoryEvent } from '../../src/checker/index.js';
import type { Fence, FencedStore, LockHandle } from '../../src/index.js';

/**
 * Records what clients and a fenced resource did, as a history for lockstock/checker (monotonic
 * times in ns): an acquire from its call to its return, a release likewise, a lost hold, and each
 * fenced write as the resource answered it — never what the code believes.
 */
export class HistoryRecorder {
  readonly events: HistoryEvent[] = [];

  record(event: Omit<HistoryEvent, 't'>): void {
    this.events.push({ ...event, t: String(process.hrtime.bigint()) } as HistoryEvent);
  }

  /** A fault the harness injected (`target`: the process or server it hit), as an `info` event. */
  fault(fault: string, target?: unknown, extra: Record<string, unknown> = {}): void {
    this.record({
      src: 'harness',
      proc: 'harness',
      type: 'info',
      f: 'fault',
      fault,
      ...(target === undefined ? {} : { target }),
      ...extra,
    } as Omit<HistoryEvent, 't'>);
  }

  /** An acquire from call to return; one that throws is recorded as failed (`error`: its name). */
  async acquire(proc: string, lock: string, take: () => Promise<LockHandle>): Promise<LockHandle> {
    this.record({ proc, type: 'invoke', f: 'acquire', lock });
    let handle: LockHandle;
    try {
      handle = await take();
    } catch (error) {
      this.record({ proc, type: 'fail', f: 'acquire', lock, error: (error as Error).name });
      throw error;
    }
    this.record({ proc, type: 'ok', f: 'acquire', lock, owner: handle.owner, token: handle.fencingToken });
    return handle;
  }

  /** Records `handle`'s loss (its signal) as a `lost` event of `proc`, when it happens. */
  watch(proc: string, lock: string, handle: LockHandle): void {
    handle.onLost((error) => this.record({ proc, type: 'ok', f: 'lost', lock, reason: error.reason }));
  }

  async release(proc: string, lock: string, handle: LockHandle): Promise<void> {
    this.record({ proc, type: 'invoke', f: 'release', lock });
    const outcome = await handle.release();
    this.record({ proc, type: 'ok', f: 'release', lock, outcome });
  }

  /** A write through the fenced store, recorded as accepted (ok) or refused (fail, 'fence'). */
  async write<V>(store: FencedStore<V>, key: string, value: V, fence: Fence): Promise<boolean> {
    const accepted = await store.write(key, value, fence);
    this.resourceAnswered(key, accepted, fence);
    return accepted;
  }

  /** What the resource answered a write under `fence` made elsewhere (another process). */
  resourceAnswered(key: string, accepted: boolean, fence: Fence): void {
    this.record({
      src: 'resource',
      proc: 'resource',
      type: accepted ? 'ok' : 'fail',
      f: 'write',
      res: key,
      token: fence.fencingToken,
      owner: fence.owner,
      ...(accepted ? {} : { error: 'fence' }),
    });
  }

  /** The events with `more` (another process's), in time order. */
  merged(more: readonly HistoryEvent[] = []): HistoryEvent[] {
    return [...this.events, ...more].sort((a, b) => (BigInt(a.t as string) < BigInt(b.t as string) ? -1 : 1));
  }
}
