import type { LockClientBase } from '../../src/backend/index.js';
import { LockTimeoutError, type Lock, type LockHandle, type ReleaseOutcome } from '../../src/index.js';
import type { HoldMode, SimBackend } from './backend.js';
import type { SimCheck } from './checks.js';
import type { Rng } from './random.js';
import type { Recorder } from './recorder.js';
import type { Actor, Scheduler } from './scheduler.js';

/** The locks multi-locks are made of: every set overlaps another. */
const PARTS = ['sim-a', 'sim-b', 'sim-c'] as const;

/** One part a multi-lock acquire took, and whether it was given back (its release invoked). */
interface Taken {
  readonly part: string;
  givenBack: boolean;
}

/**
 * Multi-locks under simulation: each operation takes a random set of two or three of PARTS — named
 * in a random order, so the core must order them itself or deadlock — through the core's MultiLock
 * (client.multiLock), all or nothing. Each part is recorded as its own process (`p0.1/sim-a`), from
 * the moment the core asks for it to its release, so the checker judges every part's exclusion,
 * tokens, ownership and (quiet phase) liveness, and a partial acquisition held on is visible. The
 * multi-lock's own rule is checked here: an acquire that fails has given back every part it took
 * before it returns (`all-or-nothing`); a deadlock shows as quiet-phase acquires that never get the
 * lock (`progress`).
 */
export class MultiScenario {
  constructor(
    private readonly scheduler: Scheduler,
    private readonly recorder: Recorder,
    private readonly clients: ReadonlyArray<LockClientBase<SimBackend>>,
    private readonly actors: readonly Actor[],
    private readonly mode: HoldMode,
    private readonly fail: (check: SimCheck, sentence: string) => void,
  ) {}

  readonly proc = async (name: string, c: number, ops: number, quiet: boolean, prng: Rng): Promise<void> => {
    const client = this.clients[c]!;
    const actor = this.actors[c]!;
    const sleep = (ms: number) => new Promise<void>((resolve) => this.scheduler.after(ms, actor, resolve));
    for (let i = 0; i < ops; i++) {
      await sleep(prng.int(0, quiet ? 20 : 80));
      const names = shuffled(PARTS, prng).slice(0, prng.int(2, 3));
      const owner = `${name}.${i}`;
      const waitMs = quiet ? 10_000 : prng.pick([0, prng.int(20, 300), prng.int(300, 2_000)]);
      const leaseMs = !quiet && this.mode === 'lease' && prng.chance(0.3) ? prng.int(120, 500) : undefined;
      const holdMs = !quiet && prng.chance(0.15) ? prng.int(200, 900) : prng.int(0, 60);
      const taken: Taken[] = [];
      const multi = client.multiLock(
        names.map((part) => this.recorded(name, owner, actor, client.mutex(part), taken)),
      );
      let handle: LockHandle;
      try {
        handle = await multi.acquire({ owner, waitMs, leaseMs });
      } catch (error) {
        const kept = taken.filter((t) => !t.givenBack).map((t) => t.part);
        if (kept.length > 0) {
          this.fail(
            'all-or-nothing',
            `all-or-nothing: ${owner}'s multi-lock acquire of ${names.join('+')} failed (${String(error)}) ` +
              `at ${this.scheduler.now.toFixed(1)} ms still holding ${kept.join(', ')}, never given back`,
          );
        }
        if (quiet) {
          this.fail(
            'progress',
            `progress: quiet ${owner} did not get ${names.join('+')} within ${waitMs} ms: ${String(error)}`,
          );
        }
        continue;
      }
      await sleep(holdMs);
      await handle.release().catch(() => undefined);
    }
  };

  /**
   * The part `lock` as the multi-lock sees it, recorded: its acquire (one try of the core's, within
   * the multi-lock's deadline) and the release of the handle it returns, as process `name/part`.
   */
  private recorded(name: string, owner: string, actor: Actor, lock: Lock, taken: Taken[]): Lock {
    const { recorder } = this;
    const part = lock.name;
    const proc = `${name}/${part}`;
    const fields = { lock: part, mode: 'x', owner };
    const tryAcquire: Lock['tryAcquire'] = async (options) => {
      recorder.invokeAcquire(proc, part, fields);
      let handle: LockHandle | undefined;
      try {
        handle = await lock.tryAcquire(options);
      } catch (error) {
        recorder.completeAcquire(proc, error instanceof LockTimeoutError ? 'fail' : 'info', fields);
        throw error;
      }
      if (!handle) {
        recorder.completeAcquire(proc, 'fail', fields);
        return undefined;
      }
      recorder.completeAcquire(proc, 'ok', { ...fields, token: handle.fencingToken });
      const hold = recorder.held(proc, part, actor, handle);
      const entry: Taken = { part, givenBack: false };
      taken.push(entry);
      const release = async (): Promise<ReleaseOutcome> => {
        entry.givenBack = true;
        recorder.record({ type: 'invoke', proc, f: 'release', lock: part, owner });
        recorder.released(hold);
        try {
          const outcome = await handle.release();
          recorder.record({ type: 'ok', proc, f: 'release', lock: part, owner, outcome });
          return outcome;
        } catch (error) {
          recorder.record({ type: 'info', proc, f: 'release', lock: part, owner });
          throw error;
        }
      };
      return withRelease(handle, release);
    };
    return Object.assign(Object.create(lock) as Lock, { tryAcquire });
  }
}

/** `handle` with another release (every other member read from the handle itself). */
export function withRelease(handle: LockHandle, release: () => Promise<ReleaseOutcome>): LockHandle {
  return new Proxy(handle, {
    get(target, key) {
      if (key === 'release') return release;
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

function shuffled<T>(items: readonly T[], rng: Rng): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
