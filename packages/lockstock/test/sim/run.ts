import { LockClientBase, type LockBackend } from '../../src/backend/index.js';
import { checkLockHistory, type HistoryEvent, type LockCheckReport } from '../../src/checker/index.js';
import { LockTimeoutError, type Lock, type LockHandle } from '../../src/index.js';
import { QUIET, SimBackend, type HoldMode, type Network } from './backend.js';
import type { Rng } from './random.js';
import { checkerFindings, excerpt, type Finding, type SimCheck } from './checks.js';
import { LatchScenario } from './latch-run.js';
import { MultiScenario } from './multi-run.js';
import { Recorder } from './recorder.js';
import { Actor, Scheduler } from './scheduler.js';
import { SimStore, type StoreMutations } from './store.js';

/** The lock kinds the simulation runs. */
export const SIM_KINDS = [
  'mutex',
  'reentrant',
  'fair',
  'spin',
  'read-write',
  'semaphore',
  'counter-semaphore',
  'election',
  'latch',
  'mutex-handoff',
  'reentrant-handoff',
  'semaphore-handoff',
  'multi-lock',
] as const;
export type SimKind = (typeof SIM_KINDS)[number];

/** The kinds whose resources hand the lock to the releasing client's next waiter (as Redis's do). */
const HAND_OFF: Partial<Record<SimKind, SimKind>> = {
  'mutex-handoff': 'mutex',
  'reentrant-handoff': 'reentrant',
  'semaphore-handoff': 'semaphore',
};

export interface SimOptions {
  readonly kind: SimKind;
  readonly seed: number;
  readonly mutations?: StoreMutations;
  /** Let one client's requests overtake each other (see Network.reorders). */
  readonly reorder?: boolean;
  /** Another store and backend than SimStore/SimBackend (the real Redis adapter: redis/world.ts). */
  readonly world?: (sim: { scheduler: Scheduler; recorder: Recorder }) => SimWorld;
}

/** A store and the lock clients over it, in place of SimStore and SimBackend (lease mode only). */
export interface SimWorld {
  client(
    actor: Actor,
    rng: Rng,
    network: () => Network,
    watchdogTimeoutMs: number,
  ): LockClientBase<LockBackend>;
  /**
   * What the store still holds (it must hold nothing once every process ended and leases ran out);
   * `owner` as far as the store tells it (the excerpt shows that process's history).
   */
  held(): Array<{ key: string; owner: string }>;
}

/** One schedule's outcome: what the checker said, and anything else that went wrong. */
export interface SimResult {
  readonly kind: SimKind;
  readonly seed: number;
  readonly mode: HoldMode;
  readonly reorder: boolean;
  readonly history: HistoryEvent[];
  /** The checker on the whole history (safety: exclusion, tokens, ownership, FIFO for fair). */
  readonly safety: LockCheckReport;
  /** The checker's liveness (a grant within the bound) on the quiet phase after the faults. */
  readonly liveness: LockCheckReport;
  /** Every failure, each a check's name and its sentence with the history excerpt (checks.ts). */
  readonly findings: Finding[];
  readonly virtualMs: number;
  readonly tasks: number;
  /** Which checks failed, each once, in the order found (see SIM_CHECKS). */
  readonly failed: SimCheck[];
}

const LOCK = 'sim-lock';
const WATCHDOG_MS = 300;
/** After the faults stop, a free lock reaches a waiter within this (spin backs off up to 128 ms). */
const GRANT_WITHIN_MS = 400;
/** A fair or write waiter's place lapses this long after its last try (longer than any pause). */
const QUEUE_TTL_MS = 2_500;

/** The lock and its history mode for one operation of a process. */
interface Target {
  readonly lock: Lock;
  readonly mode: 'x' | 'r' | 'w' | 'p';
  readonly permits?: number;
  readonly reentrant: boolean;
}

/**
 * Runs one schedule: a seeded choice of clients, processes, operations and faults, the real lock core
 * of `kind` over the simulated backend, then the checker over what happened. Same seed, same history.
 */
export async function runSchedule({
  kind: named,
  seed,
  mutations = {},
  reorder = false,
  world: makeWorld,
}: SimOptions): Promise<SimResult> {
  // A hand-off kind is its base kind on resources that hand off: same schedule shape, same oracle.
  const kind = HAND_OFF[named] ?? named;
  const handsOff = kind !== named;
  const scheduler = new Scheduler(seed);
  const rng = scheduler.rng;
  const recorder = new Recorder(scheduler);
  const world = makeWorld?.({ scheduler, recorder });
  const mode: HoldMode = rng.chance(0.5) || world ? 'lease' : 'session';
  const store = new SimStore(
    () => scheduler.now,
    mutations,
    (owner, lock) => recorder.queued(owner, lock),
    mode === 'lease' ? QUEUE_TTL_MS : Infinity,
    (owner, lock) => recorder.offered(owner, lock),
  );
  // Counter permits have no lease: a lost reply leaks one for ever (as Redisson's RSemaphore), so
  // that kind runs without losses. A fair waiter whose session ends loses its place in the queue,
  // which no history event says: fair locks in session mode run without session loss.
  const lossless = kind === 'counter-semaphore' || (kind === 'fair' && mode === 'session');
  const faulty: Network = {
    maxDelayMs: rng.int(1, 30),
    lossRate: lossless ? 0 : rng.pick([0, 0.01, 0.03, 0.06]),
    duplicateRate: rng.pick([0, 0.1, 0.3]),
    wakeLossRate: rng.pick([0, 0, 0.05, 0.2]),
    timeoutMs: 100,
    reorders: reorder,
  };
  let network = faulty;
  const permits = rng.int(2, 3);
  const clientCount = rng.int(2, 4);
  const actors: Actor[] = [];
  const backends: SimBackend[] = [];
  const clients: LockClientBase<SimBackend>[] = [];
  for (let c = 0; c < clientCount; c++) {
    // Skew within the lease's drift allowance (1% + 2 ms): a slow clock trusts a lease longer.
    const actor = new Actor(`c${c}`, 1 + (rng.next() - 0.5) * 0.008);
    const backendRng = rng.fork();
    actors.push(actor);
    clients.push(
      (world?.client(actor, backendRng, () => network, WATCHDOG_MS) as
        LockClientBase<SimBackend> | undefined) ??
        new LockClientBase(
          (host) => {
            const backend = new SimBackend(
              host,
              store,
              scheduler,
              actor,
              mode,
              () => network,
              backendRng,
              handsOff,
            );
            backends.push(backend);
            return backend;
          },
          { watchdogTimeoutMs: WATCHDOG_MS },
        ),
    );
  }
  const targetsOf = (client: LockClientBase<SimBackend>): Target[] => {
    switch (kind) {
      case 'mutex':
        return [{ lock: client.mutex(LOCK), mode: 'x', reentrant: false }];
      case 'reentrant':
        return [{ lock: client.reentrant(LOCK), mode: 'x', reentrant: true }];
      case 'fair':
        return [{ lock: client.fair(LOCK), mode: 'x', reentrant: true }];
      case 'spin':
        return [{ lock: client.spin(LOCK), mode: 'x', reentrant: true }];
      case 'read-write': {
        const rw = client.readWrite(LOCK);
        return [
          { lock: rw.read, mode: 'r', reentrant: true },
          { lock: rw.write, mode: 'w', reentrant: true },
        ];
      }
      case 'semaphore':
        return [{ lock: client.semaphore(LOCK, { permits }), mode: 'p', permits, reentrant: false }];
      case 'counter-semaphore':
        return [{ lock: client.counterSemaphore(LOCK, { permits }), mode: 'p', permits, reentrant: false }];
      default: {
        // The generic client's election over the backend's mutex: a campaign is an acquire whose
        // term wraps the hold (its token, signal and lease are the hold's).
        const election = client.election(LOCK);
        const lock = {
          acquire: async ({ owner, waitMs }: { owner: string; waitMs: number }) => {
            const term = await election.campaign(owner, { waitMs });
            return (term as unknown as { hold: LockHandle }).hold;
          },
        } as unknown as Lock;
        return [{ lock, mode: 'x', reentrant: false }];
      }
    }
  };

  let running = 0;
  const sleep = (actor: Actor, ms: number) =>
    new Promise<void>((resolve) => scheduler.after(ms, actor, resolve));

  /** One process: `ops` acquire/hold/release rounds on its client's lock(s). */
  const proc = async (name: string, c: number, ops: number, quiet: boolean, prng: Rng): Promise<void> => {
    const actor = actors[c]!;
    const targets = targetsOf(clients[c]!);
    for (let i = 0; i < ops; i++) {
      await sleep(actor, prng.int(0, quiet ? 20 : 80));
      const target = prng.pick(targets);
      const owner = `${name}.${i}`;
      const waitMs = quiet ? 10_000 : prng.pick([0, prng.int(20, 300), prng.int(300, 2_000)]);
      const leaseMs =
        !quiet && mode === 'lease' && kind !== 'counter-semaphore' && kind !== 'election' && prng.chance(0.3)
          ? prng.int(120, 500)
          : undefined;
      // Long holds only while faults run: in the quiet phase a reader waits behind a queued writer (writers
      // are preferred) that the checker's liveness does not know of, for as long as that writer holds.
      const holdMs = !quiet && prng.chance(0.15) ? prng.int(200, 900) : prng.int(0, 60);
      const reenter = target.reentrant && prng.chance(0.3);
      const fields = { lock: LOCK, mode: target.mode, permits: target.permits };
      recorder.invokeAcquire(name, LOCK, { ...fields, owner });
      let handle: LockHandle | undefined;
      try {
        handle = await target.lock.acquire({ owner, waitMs, leaseMs });
        recorder.completeAcquire(name, 'ok', { ...fields, owner, token: handle.fencingToken });
      } catch (error) {
        // A timeout is a known refusal; any other error leaves the outcome unknown (a lost reply).
        recorder.completeAcquire(name, error instanceof LockTimeoutError ? 'fail' : 'info', {
          ...fields,
          owner,
        });
        if (quiet)
          fail('progress', `progress: quiet ${name} (${owner}) did not get ${LOCK}: ${String(error)}`);
        continue;
      }
      const hold = recorder.held(name, LOCK, actor, handle);
      const holds = [{ proc: name, handle, hold }];
      const reentryAfter = prng.int(0, holdMs);
      if (reenter) {
        // Later in the hold, the same owner enters again. Recorded as a process of its own (the
        // checker ends all of a process's holds of a lock on one `lost`: the inner handle's belief
        // must be judged by its own signal), except on a fair lock, whose FIFO check exempts
        // re-entries by the holding process only.
        await sleep(actor, reentryAfter);
        const proc = kind === 'fair' ? name : `${name}/r`;
        recorder.invokeAcquire(proc, LOCK, { ...fields, owner });
        try {
          const again = await target.lock.acquire({ owner, waitMs: 0, leaseMs });
          recorder.completeAcquire(proc, 'ok', { ...fields, owner, token: again.fencingToken });
          holds.push({ proc, handle: again, hold: recorder.held(proc, LOCK, actor, again) });
        } catch (error) {
          recorder.completeAcquire(proc, error instanceof LockTimeoutError ? 'fail' : 'info', {
            ...fields,
            owner,
          });
        }
      }
      await sleep(actor, holdMs - (reenter ? reentryAfter : 0));
      // Every order of release: innermost first or outermost first.
      if (prng.chance(0.5)) holds.reverse();
      for (const { proc, handle: h, hold: held } of holds) {
        recorder.record({ type: 'invoke', proc, f: 'release', lock: LOCK, owner });
        recorder.released(held);
        try {
          const outcome = await h.release();
          recorder.record({ type: 'ok', proc, f: 'release', lock: LOCK, owner, outcome });
        } catch {
          recorder.record({ type: 'info', proc, f: 'release', lock: LOCK, owner });
        }
      }
    }
  };

  const findings: Finding[] = [];
  const fail = (check: SimCheck, sentence: string) => void findings.push({ check, sentence });
  const latch = new LatchScenario(scheduler, store, recorder, clients, actors, rng, (s) => fail('latch', s));
  const multi = new MultiScenario(scheduler, recorder, clients, actors, mode, fail);
  const start = (names: string, quiet: boolean) => {
    for (let c = 0; c < clientCount; c++) {
      const procs = quiet ? 1 : rng.int(1, 3);
      for (let p = 0; p < procs; p++) {
        const name = `${names}${c}.${p}`;
        const ops = quiet ? 2 : rng.int(3, 8);
        const prng = rng.fork();
        running++;
        const run = kind === 'latch' ? latch.proc : kind === 'multi-lock' ? multi.proc : proc;
        scheduler.as(actors[c], () => {
          run(name, c, ops, quiet, prng).then(
            () => running--,
            (error: unknown) => {
              running--;
              fail('crash', `crash: ${name} threw ${String(error)}`);
            },
          );
        });
      }
    }
  };

  const restore = scheduler.install();
  try {
    // Faults: pauses (some past a lease), session losses, while the processes run.
    for (const [c, actor] of actors.entries()) {
      for (let n = rng.int(0, 2); n > 0; n--) {
        const at = rng.int(0, 3_000);
        const pauseMs = rng.pick([rng.int(20, 150), rng.int(300, 1_200)]);
        scheduler.at(
          at,
          undefined,
          () => (actor.pausedUntil = Math.max(actor.pausedUntil, scheduler.now + pauseMs)),
        );
      }
      if (mode === 'session' && !lossless && rng.chance(0.5)) {
        scheduler.at(rng.int(0, 3_000), actor, () => backends[c]!.connectionLost());
      }
    }
    start('p', false);
    const phase1 = await scheduler.run(() => running === 0, 120_000);
    if (phase1 !== 'done')
      fail('hang', `hang: the faulty phase did not finish (${phase1}) at ${scheduler.now} ms`);
    // The faults stop: no pause, no loss; every lease left by a lost reply runs out first.
    network = QUIET;
    for (const actor of actors) actor.pausedUntil = 0;
    const settleUntil = scheduler.now + QUEUE_TTL_MS + 500;
    await scheduler.run(() => false, settleUntil);
    const leftover = world ? world.held() : store.held();
    if (leftover.length > 0) {
      const [from, to] = [
        BigInt(Math.round((scheduler.now - 5_000) * 1e6)),
        BigInt(Math.round(scheduler.now * 1e6)),
      ];
      fail(
        'leak',
        `leak: the store still holds ${leftover.map((h) => `${h.key} for ${h.owner}`).join(', ')} ` +
          `${Math.round(scheduler.now - settleUntil + QUEUE_TTL_MS + 500)} ms after every process ended` +
          excerpt(
            recorder.events,
            leftover.map((h) => h.owner),
            from,
            to,
          ),
      );
    }
    const quietFrom = recorder.events.length;
    const quietAt = scheduler.now;
    start('q', true);
    const phase2 = await scheduler.run(() => running === 0, quietAt + 60_000);
    if (phase2 !== 'done')
      fail('hang', `hang: the quiet phase did not finish (${phase2}) at ${scheduler.now} ms`);
    for (const client of clients) scheduler.as(undefined, () => void client.close());
    await scheduler.run(() => false, scheduler.now + 10);
    if (kind === 'latch') latch.check(GRANT_WITHIN_MS);
    const history = recorder.events;
    const fair = kind === 'fair';
    const safety = checkLockHistory(history, { fair });
    const liveness = checkLockHistory(history.slice(quietFrom), { grantWithinNs: GRANT_WITHIN_MS * 1e6 });
    findings.unshift(...checkerFindings(history, safety, liveness));
    const failed = [...new Set(findings.map((f) => f.check))];
    return {
      kind: named,
      seed,
      mode,
      reorder,
      history,
      safety,
      liveness,
      findings,
      virtualMs: Math.round(scheduler.now),
      tasks: scheduler.steps,
      failed,
    };
  } finally {
    restore();
  }
}

/** A failed schedule: the line to replay it by, then each finding's sentence and excerpt. */
export function describeFailure(result: SimResult): string {
  return (
    `kind=${result.kind} seed=${result.seed} mode=${result.mode} failed=${result.failed.join(',')} — replay: ` +
    `npm run sim -w lockstock -- --kind ${result.kind} --seed ${result.seed}${result.reorder ? ' --reorder' : ''}` +
    result.findings.map((f) => `\n  ${f.sentence}`).join('')
  );
}
