import { describe, expect, it } from 'vitest';
import { formatHistory } from '../../src/checker/index.js';
import { Hold } from '../../src/locks/core/hold.js';
import { hunt, MUTATIONS, type Mutation } from './mutations.js';
import { describeFailure, runSchedule, SIM_KINDS } from './run.js';
import { redisWorld } from './redis/world.js';

/**
 * The quick row of the deterministic simulation (test/sim/): a fixed budget of seeds per lock kind,
 * each a schedule of several clients over the simulated backend with delays, lost replies, duplicated
 * wake-ups, pauses past a lease, clock skew and session losses, checked by lockstock/checker. More
 * seeds: `npm run sim -w lockstock -- --seeds 2000`.
 */
const SEEDS_PER_KIND = 6;
/** A quick mutation must be caught within this many seeds (see the `caught at` figures in docs/backend.md). */
const MUTATION_SEED_BOUND = 10;

describe('every lock kind under simulation', () => {
  for (const kind of SIM_KINDS) {
    it(`${kind}: ${SEEDS_PER_KIND} schedules pass the checker`, async () => {
      const failures: string[] = [];
      for (let seed = 1; seed <= SEEDS_PER_KIND; seed++) {
        const result = await runSchedule({ kind, seed });
        if (result.failed.length > 0) failures.push(describeFailure(result));
      }
      expect(failures).toEqual([]);
    });
  }

  it('a seed replays exactly: the same history, event for event', async () => {
    for (const kind of ['fair', 'read-write'] as const) {
      const first = await runSchedule({ kind, seed: 7 });
      const again = await runSchedule({ kind, seed: 7 });
      expect(formatHistory(again.history)).toBe(formatHistory(first.history));
      expect(again.tasks).toBe(first.tasks);
      const other = await runSchedule({ kind, seed: 8 });
      expect(formatHistory(other.history)).not.toBe(formatHistory(first.history));
    }
  });
});

describe('the simulation fails when it should', () => {
  for (const mutation of MUTATIONS.filter((m) => !m.slow)) {
    it(`${mutation.name} (${mutation.kind}: ${mutation.description}) is caught by '${mutation.catches}'`, async () => {
      const { caught, verdict, result } = await hunt(mutation, MUTATION_SEED_BOUND);
      expect(caught, `${verdict}${result ? `\n${describeFailure(result)}` : ''}`).toBe(true);
      // The finding says what broke, in one sentence, with the history that shows it.
      const finding = result!.findings.find((f) => f.check === mutation.catches)!;
      expect(finding.sentence).toMatch(new RegExp(`^${mutation.catches}: \\S.*`));
    });
  }

  it('at least five of them mutate the real core (not the simulated store)', () => {
    expect(MUTATIONS.filter((m) => m.core && !m.slow).length).toBeGreaterThanOrEqual(5);
  });

  it('a mutation that only crashes the run is not caught, whatever it was meant to break', async () => {
    const crashing: Mutation = {
      name: 'crashes',
      kind: 'mutex',
      catches: 'exclusion',
      description: "a handle's onLost throws (the harness's process crashes)",
      core: () => {
        const proto = Hold.prototype as unknown as Record<string, unknown>;
        const original = proto.onLost;
        proto.onLost = () => {
          throw new Error('deliberate');
        };
        return () => (proto.onLost = original);
      },
    };
    const { caught, verdict, result } = await hunt(crashing, 3);
    expect(result?.failed).toContain('crash');
    expect(caught).toBe(false);
    expect(verdict).toMatch(/broke the run down \(crash/);
  });
});

describe('what the simulation found', () => {
  // A grant that comes back too late (its lease already untrustworthy: here the client was paused)
  // is given back by a release for its owner, fire and forget, and the waiter tries again at once
  // under the same owner (core/lock.ts, CoreLock.attempt, LATE_GRANT). When a client's requests can
  // overtake each other (a pool of connections, multiplexed streams), the give-back reaches the
  // store after the retry's new grant and releases it. Seed 167, traced: p2.0.5's attempt granted
  // token 17 at 1471 ms, its reply reached the paused client at 2438; at 2438 it sent the give-back
  // and a retry; the retry got token 18 at 2445, the give-back released that hold at 2453, and
  // p2.1.5 was granted token 19 at 2488 while p2.0.5 held 18 (exclusion). On one in-order
  // connection (Redis) the give-back arrived first, as lock.ts's comment relied on; nothing in the
  // SPI asks a backend for that order. Fixed: the core now awaits the give-back before it tries again
  // (this test failed before).
  it('a late grant is given back before the retry (mutex, seed 167, reordering)', async () => {
    const result = await runSchedule({ kind: 'mutex', seed: 167, reorder: true });
    expect(result.failed, describeFailure(result)).toEqual([]);
  });

  // The same give-back cost a fair waiter its place. Seed 95, traced: p1.0.1 queued at 320 ms; its
  // attempt sent at 503 ms (its client just resumed) was granted at 521 as the head of the queue, but
  // the reply reached the client in its next pause, at 1038, too late to trust: the core gave it back
  // and tried again, and the store queued it at the back, behind p1.1.2 and p0.1.6, who began waiting
  // after it and were granted first. Two fixes: the core now asks the store with an extend whether a
  // late grant is still the owner's and keeps it if so (test/core/late-grant.test.ts); here the
  // store's lease (300 ms) had run out during the pause, so the place is lost by the lease's nature —
  // the store granted in order, and says so with an `offered` event, which the checker's FIFO rule
  // now reads (the store's grant ends a waiter's place, heard of or not). This failed before both.
  it('a fair waiter whose grant lapsed unheard was served in order (fair, seed 95)', async () => {
    const result = await runSchedule({ kind: 'fair', seed: 95 });
    expect(result.failed, describeFailure(result)).toEqual([]);
  });

  // Found by the recorded long run (docs/development.md): a re-entrant hold lost with its session,
  // the same owner entering again (a fresh hold: the store had dropped the old one), then the lost
  // outer handle released. The store releases by owner, so that release ended the newer hold while
  // its handle still held it, and another client was granted. read-write seed 398, traced: p0.0.1
  // got the write lock (token 3) at 271 ms and lost it at 275; its re-entry got token 6 at 325; the
  // outer handle's release at 340 released token 6 in the store; p0.1.2 was granted token 7 at 372
  // while the inner handle held until its loss at 448 (exclusion). Fixed: a lost hold whose owner
  // holds again in this client answers `expired` without asking the store (core/hold.ts). Both seeds
  // failed before.
  it('a lost hold released after its owner entered again ends nothing of the newer hold (read-write 398, reentrant 1808)', async () => {
    for (const [kind, seed] of [
      ['read-write', 398],
      ['reentrant', 1808],
    ] as const) {
      const result = await runSchedule({ kind, seed });
      expect(result.failed, describeFailure(result)).toEqual([]);
    }
  });

  // That fix answers the lost outer handle's release `expired` without asking the store, and the
  // checker's ownership rule read an `expired` as ending the owner's grant — the one the re-entry
  // (another process of the same owner) held — then flagged the re-entry's own release as one "while
  // nobody held it". The rule now ends another process's grant of the owner only if the release took
  // effect (lockstock/checker, ownership.ts). Failed before it.
  it("a refused release by a lost hold's process ends nothing of its owner's re-entry (checker: reentrant-handoff 106, fair 19)", async () => {
    // On a fair lock the re-entry is recorded under the holder's own process: the refused release
    // gives back the grant it was taken for (ownership.ts); fair 19 failed before that.
    for (const [kind, seed] of [
      ['reentrant-handoff', 106],
      ['fair', 19],
    ] as const) {
      const result = await runSchedule({ kind, seed });
      expect(result.failed, describeFailure(result)).toEqual([]);
    }
  });

  // Found by the long run too, and open: a hand-off to a local waiter answered after its lease had
  // passed. The releasing client's reply came 640 ms late (it was paused); the store's lease of the
  // hand-off (the waiter's own lease) ran out meanwhile and another client was granted, yet the core
  // gave the waiter a hold trusted from the release's request time (reentrant-handoff seed 668: p3.0
  // handed token 5 at 1116 ms, p1.1 granted token 6 at 1445, p3.0's handle delivered at 1760). A
  // fix that confirmed such a hand-off or gave it back, as a try's late grant is (late-grant.ts),
  // made these seeds pass but failed the real Redis scripts under simulation (reentrant seed 238
  // with --redis): the give-back, by owner, raced the waiter's own retry under the same owner and
  // ended its new hold. Reverted; it needs a give-back the waiter's retry cannot overtake. Pinned so
  // a fix shows: this then fails.
  it.fails(
    'a hand-off answered after its lease passed is not delivered as trusted (reentrant-handoff 668, 884, 1573; semaphore-handoff 276)',
    async () => {
      for (const [kind, seed] of [
        ['reentrant-handoff', 668],
        ['reentrant-handoff', 884],
        ['reentrant-handoff', 1573],
        ['semaphore-handoff', 276],
      ] as const) {
        const result = await runSchedule({ kind, seed });
        expect(result.failed, describeFailure(result)).toEqual([]);
      }
    },
  );

  // The long run's open finding: an acquire whose reply was lost (the call timed out, its outcome
  // unknown) is not given back, so a hold the store did grant stays there until its lease ends — in
  // lease mode the others wait up to a lease for nothing; the end-of-run check calls it a leak. Seen
  // on an election's campaign and on a multi-lock's part (seed 1431 both; the last acquire's reply
  // lost 106 ms in). A give-back after an unknown outcome must not end a re-entered hold of the same
  // owner, nor overtake a retry (late-grant.ts). Pinned so a fix shows: these then fail.
  it.fails(
    'an acquire whose reply was lost leaves no hold behind (election, seed 1431, lease mode)',
    async () => {
      const result = await runSchedule({ kind: 'election', seed: 1431 });
      expect(result.failed, describeFailure(result)).toEqual([]);
    },
  );
  it.fails(
    'an acquire whose reply was lost leaves no hold behind (multi-lock, seed 1431, lease mode)',
    async () => {
      const result = await runSchedule({ kind: 'multi-lock', seed: 1431 });
      expect(result.failed, describeFailure(result)).toEqual([]);
    },
  );
  // The same family over the real Lua (--redis): the re-entry's acquire outcome unknown (its reply
  // lost), the lost outer handle's release went to the store — the core did not know its owner held
  // again — and ended the re-entry's grant (reentrant seed 139: ownership).
  it.fails(
    'a lost outer handle ends no re-entry whose outcome was unknown (reentrant, seed 139, Redis scripts)',
    async () => {
      const result = await runSchedule({ kind: 'reentrant', seed: 139, world: redisWorld() });
      expect(result.failed, describeFailure(result)).toEqual([]);
    },
  );
});
