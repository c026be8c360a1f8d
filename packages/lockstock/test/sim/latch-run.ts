import type { LockClientBase } from '../../src/backend/index.js';
import type { SimBackend } from './backend.js';
import type { Rng } from './random.js';
import type { Recorder } from './recorder.js';
import type { Actor, Scheduler } from './scheduler.js';
import type { SimStore } from './store.js';

const LATCH = 'sim-latch';

interface Waited {
  readonly proc: string;
  readonly invokedAt: number;
  readonly deadline: number;
  returnedAt?: number;
  outcome?: 'released' | 'timeout' | 'error';
}

/**
 * The count-down latch under simulation. The checker has no latch model, so this checks it here,
 * from the store's record of when the count reached zero: no wait returns true before it (safety,
 * under every fault), and in the quiet phase, once a process counts the latch down to zero, every
 * wait returns true within the bound (liveness).
 */
export class LatchScenario {
  private readonly waits: Waited[] = [];
  /** Fault-phase operations so far, to set the count above (or sometimes below) them. */
  private counted = false;

  constructor(
    private readonly scheduler: Scheduler,
    private readonly store: SimStore,
    private readonly recorder: Recorder,
    private readonly clients: ReadonlyArray<LockClientBase<SimBackend>>,
    private readonly actors: readonly Actor[],
    private readonly rng: Rng,
    private readonly report: (sentence: string) => void,
  ) {}

  readonly proc = async (name: string, c: number, ops: number, quiet: boolean, prng: Rng): Promise<void> => {
    const latch = this.clients[c]!.countDownLatch(LATCH);
    const actor = this.actors[c]!;
    if (!this.counted) {
      // Set by the harness in the store: often more than the fault phase counts down, sometimes less.
      this.counted = true;
      this.store.state(`latch:${LATCH}`).permits = this.rng.int(2, 12);
    }
    const sleep = (ms: number) => new Promise<void>((resolve) => this.scheduler.after(ms, actor, resolve));
    if (quiet && name.endsWith('0.0')) {
      // One process counts down to zero; every other one waits.
      await sleep(100);
      for (let left = await latch.count(); left > 0; left = await latch.count()) await latch.countDown();
      return;
    }
    for (let i = 0; i < ops; i++) {
      await sleep(prng.int(0, 80));
      if (!quiet && prng.chance(0.4)) {
        this.recorder.record({ type: 'invoke', proc: name, f: 'count-down', lock: LATCH });
        await latch.countDown().then(
          (left) => this.recorder.record({ type: 'ok', proc: name, f: 'count-down', lock: LATCH, left }),
          () => this.recorder.record({ type: 'info', proc: name, f: 'count-down', lock: LATCH }),
        );
        continue;
      }
      const waitMs = quiet ? 10_000 : prng.pick([0, prng.int(50, 500), prng.int(500, 3_000)]);
      const waited: Waited = {
        proc: name,
        invokedAt: this.scheduler.now,
        deadline: this.scheduler.now + waitMs,
      };
      this.waits.push(waited);
      try {
        waited.outcome = (await latch.wait({ waitMs })) ? 'released' : 'timeout';
      } catch {
        waited.outcome = 'error';
      }
      waited.returnedAt = this.scheduler.now;
    }
  };

  check(boundMs: number): void {
    const zeroAt = this.store.latchZeroAt;
    if (zeroAt === undefined) {
      this.report('latch: the count never reached zero');
      return;
    }
    for (const w of this.waits) {
      if (w.returnedAt === undefined) this.report(`latch: ${w.proc}'s wait never returned`);
      else if (w.outcome === 'released' && w.returnedAt < zeroAt) {
        this.report(
          `latch: ${w.proc}'s wait returned true at ${w.returnedAt} ms, before zero at ${zeroAt} ms`,
        );
      } else if (w.proc.startsWith('q') && w.outcome !== 'released') {
        this.report(`latch: quiet ${w.proc}'s wait ended ${w.outcome ?? 'never'}`);
      } else if (w.proc.startsWith('q') && w.returnedAt - Math.max(zeroAt, w.invokedAt) > boundMs) {
        this.report(
          `latch: quiet ${w.proc} released ${Math.round(w.returnedAt - Math.max(zeroAt, w.invokedAt))} ms after zero`,
        );
      }
    }
  }
}
