/**
 * The contract's generic cases, the same for every lock kind: exclusion and bounds across contenders
 * (checked from what they recorded, and by lockstock/checker), try/timeout/abort leaving nothing
 * behind, release only by the owner, a SIGKILLed holder, a lost hold reported through its signal and
 * event (within its lease and a margin), fencing tokens, inspect(), a closed client's waiters, the
 * diagnostics channels, and re-entry. Each kind's own rules are in kinds/.
 */
import assert from 'node:assert/strict';
import type { EventEmitter } from 'node:events';
import { LockAbortedError, LockClientClosedError, LockLostError, LockTimeoutError } from '../locks/errors.js';
import type { Lock, LockClient, LockHandle, LockLostEvent } from '../locks/types.js';
import { assertBound } from './bound-check.js';
import { lockName, type CaseArgs, type CaseMaker } from './case-kit.js';
import { checkChannels } from './channels.js';
import { assertInstance, poll, settlement } from './check.js';
import { demand } from './violation.js';
import { contendersOf, runProbe } from './probe.js';
import { forkHolders } from './processes.js';
import { CONTRACT_SUBJECTS, type ContractSubject } from './subjects.js';

const PROCESSES = 4;
const LOOPS = 2;
const SECTIONS = 15;
const LEASE_MS = 1_000;
/** The lease of the hold the lost-hold case breaks (a watchdog's; session backends watch instead). */
const LOST_LEASE_MS = 300;
/** How long past its lease a broken hold may stay unreported on a loaded machine. */
const LOST_MARGIN_MS = 15_000;
const LOST_BOUND_MS = LOST_LEASE_MS + LOST_MARGIN_MS;
/** Rounds of the close race: each closes a client at another moment of its waiters' acquires. */
const CLOSE_ROUNDS = 20;

/**
 * Takes enough holds that the next acquire of `subject` must wait: the opposite side's lock for
 * readers, otherwise as many holds as the kind admits, each under its own owner.
 */
async function occupy(subject: ContractSubject, client: LockClient, name: string): Promise<LockHandle[]> {
  if (subject.opposite) return [await subject.opposite(client, name).acquire()];
  const lock = subject.make(client, name);
  const holds: LockHandle[] = [];
  for (let i = 0; i < subject.bound; i++) holds.push(await lock.acquire({ owner: `occupant-${i}` }));
  return holds;
}

function nextLost(client: LockClient, name: string): Promise<LockLostEvent> {
  const events = client as unknown as EventEmitter;
  return new Promise((resolve) => {
    const listener = (event: LockLostEvent) => {
      if (!event.name.startsWith(name)) return;
      events.off('lost', listener);
      resolve(event);
    };
    events.on('lost', listener);
  });
}

/** Adds the generic cases of the contract subject `label` (a key of CONTRACT_SUBJECTS). */
export function genericCases(maker: CaseMaker, label: string): void {
  const subject = CONTRACT_SUBJECTS[label];
  if (!subject)
    throw new Error(`no contract subject ${label} (${Object.keys(CONTRACT_SUBJECTS).join(', ')})`);
  const backend = maker.backend;
  const processes = backend.processes;
  const inProcess = processes === undefined;
  const module = processes && (processes.module instanceof URL ? processes.module.href : processes.module);
  const mixedOnly = subject.mixed !== undefined;
  const kind = {
    label,
    families: subject.families,
    refuses: (client: LockClient) => subject.make(client, lockName(label)),
  };
  const add = (...args: CaseArgs) => maker.add(kind, ...args);
  const mixedSkip = mixedOnly && 'mixed sections run in the bound check only';
  const elsewhere = inProcess && 'an in-process backend has no holder in another OS process';

  add(
    `holds its bound across ${PROCESSES} ${inProcess ? 'clients of one process' : 'OS processes'}`,
    subject.bound === Infinity && !mixedOnly && 'readers alone have no bound',
    async () => {
      const contenders = contendersOf(backend, PROCESSES, { watchdogTimeoutMs: 5_000 });
      const probe = await runProbe(contenders, {
        subject: label,
        name: lockName(label),
        loops: LOOPS,
        sections: SECTIONS,
      });
      assert.equal(new Set(probe.records.map((r) => r.pid)).size, PROCESSES);
      assert.equal(probe.report.sections, PROCESSES * LOOPS * SECTIONS);
      assertBound(label, subject, probe);
    },
  );

  add('try, timeout and abort leave nothing behind', mixedSkip, async (clients) => {
    const name = lockName(label);
    const lock = subject.make(await clients.client(), name);
    const holds = await occupy(subject, await clients.client(), name);
    assert.equal(await lock.tryAcquire(), undefined);
    assert.equal(await lock.tryAcquire({ waitMs: 30 }), undefined);
    assertInstance(await settlement(lock.acquire({ waitMs: 30 }), 30_000), LockTimeoutError);
    const controller = new AbortController();
    const aborted = lock.acquire({ signal: controller.signal });
    controller.abort(new Error('gave up'));
    assertInstance(await settlement(aborted, 30_000), LockAbortedError);
    await Promise.all(holds.map((h) => h.release()));
    // None of the refused or abandoned attempts holds anything: the lock is free for a newcomer.
    const handle = await lock.acquire({ waitMs: 5_000 });
    assert.equal(await handle.release(), 'released');
    // A server-side wait granted just after its waiter gave up is given back in the background (a
    // waiter's leave is fire and forget); a shared newcomer does not wait for that: look until it is.
    await poll(() => lock.isLocked(), false, 5_000);
  });

  add(
    'only the owner releases; a stale release changes nothing',
    mixedSkip || (!subject.leased && 'its holds cannot end behind their backs'),
    async (clients) => {
      const [a, b] = [await clients.client(), await clients.client()];
      const name = lockName(label);
      const stale = await subject.make(a, name).acquire();
      await backend.breakHolds(a, subject.make(a, name)); // its hold ends behind its back
      const fresh = await subject.make(b, name).acquire({ waitMs: 5_000 });
      const outcome = await stale.release();
      assert.ok(outcome === 'not_owner' || outcome === 'expired', `a stale release answered ${outcome}`);
      assert.equal(await subject.make(b, name).isLocked(), true);
      assert.equal(await fresh.release(), 'released');
    },
  );

  add(
    subject.leased
      ? 'a SIGKILLed holder frees it within its lease'
      : 'a SIGKILLed holder keeps its permit for good (no lease)',
    mixedSkip || elsewhere,
    async (clients, offered) => {
      // A backend whose session carries the holds (no lease per hold) frees them when the session
      // of the killed holder times out: its config sets that timeout to the lease.
      const session = offered.leases === 'session';
      const modes = !subject.leased ? ['watchdog'] : session ? ['session'] : ['lease', 'watchdog'];
      for (const mode of modes) {
        const name = lockName(`${label}-${mode}`);
        const holds = subject.opposite ? 1 : subject.bound;
        const config = processes!.config(
          session
            ? { sessionTimeoutMs: LEASE_MS, watchdogTimeoutMs: 30_000 }
            : { watchdogTimeoutMs: mode === 'watchdog' ? LEASE_MS : 30_000 },
        );
        const [holder] = forkHolders(module!, config, { subject: label, name, mode, ms: LEASE_MS, holds });
        try {
          const acquired = await holder!.next('acquired');
          const client = await clients.client();
          const blocked: Lock = subject.opposite
            ? subject.opposite(client, name)
            : subject.make(client, name);
          assert.equal(await blocked.tryAcquire(), undefined);
          holder!.kill('SIGKILL');
          assert.equal((await holder!.exited)[1], 'SIGKILL');
          const killedAt = performance.now();
          // Nobody releases it: only the lease running out can let us in.
          const handle = await blocked.tryAcquire({ waitMs: LEASE_MS + 3_000 });
          if (!subject.leased) {
            assert.equal(handle, undefined, 'a permit without a lease was freed');
            continue;
          }
          assert.ok(handle, 'the killed holder still holds it');
          const waited = performance.now() - killedAt;
          assert.ok(waited <= LEASE_MS + 1_500, `freed after ${Math.round(waited)} ms`);
          assert.ok(handle.fencingToken > Math.max(...(acquired.tokens as number[])), 'the token went back');
          await handle.release();
        } finally {
          holder!.kill('SIGKILL');
        }
      }
    },
  );

  add(
    'a lost lease aborts the signal and is reported',
    mixedSkip || (!subject.leased && 'its holds cannot end behind their backs'),
    async (clients) => {
      const client = await clients.client({ watchdogTimeoutMs: LOST_LEASE_MS });
      const name = lockName(label);
      const lock = subject.make(client, name);
      const handle = await lock.acquire();
      const lost = nextLost(client, name);
      await backend.breakHolds(client, lock);
      const brokenAt = performance.now();
      // A backend that watches its holds may report the loss before breakHolds returns. One that
      // never reports it fails here, saying so, rather than as the runner's bare timeout.
      const aborted = handle.signal.aborted
        ? true
        : new Promise((resolve) => handle.signal.addEventListener('abort', resolve, { once: true }));
      const [signalled, event] = await Promise.all([
        settlement(Promise.resolve(aborted), LOST_BOUND_MS),
        settlement(lost, LOST_BOUND_MS),
      ]);
      const missed = [
        signalled === 'pending' && 'its signal never aborted',
        event === 'pending' && "no 'lost' event came",
      ];
      demand(
        !missed.some(Boolean),
        label,
        () =>
          `a hold ended behind its holder's back was never reported within its lease (${LOST_LEASE_MS} ms) ` +
          `plus ${LOST_MARGIN_MS} ms`,
        () =>
          `owner ${handle.owner} (token ${handle.fencingToken}) broken at 0 ms, still unaware at ` +
          `${Math.round(performance.now() - brokenAt)} ms: ${missed.filter(Boolean).join(', ')}`,
      );
      assertInstance(handle.signal.reason, LockLostError, 'signal.reason: ');
      assertInstance(handle.lostError, LockLostError, 'lostError: ');
      assertInstance((event as LockLostEvent).error, LockLostError, "the 'lost' event: ");
      await handle.release();
    },
  );

  add('fencing tokens strictly increase across holders', mixedSkip, async (clients) => {
    const [a, b] = [await clients.client(), await clients.client()];
    const name = lockName(label);
    const tokens: number[] = [];
    for (let i = 0; i < 6; i++) {
      const lock: Lock = subject.make(i % 2 ? a : b, name);
      const handle = await lock.acquire({ owner: `owner-${i}` });
      tokens.push(handle.fencingToken);
      await handle.release();
    }
    for (let i = 1; i < tokens.length; i++)
      assert.ok(tokens[i]! > tokens[i - 1]!, `tokens ${tokens.join(', ')}`);
  });

  add(
    'inspect() names a holder in another OS process: its pid, host and label',
    mixedSkip ||
      elsewhere ||
      (subject.families.length > 1 && "a multi-lock's parts each report their holders"),
    async (clients, offered, context) => {
      const stored = offered.holderMetadata ?? [];
      if (!subject.families.every((family) => stored.includes(family))) {
        context.skip('the backend stores no holder metadata for it (capabilities.holderMetadata)');
        return;
      }
      const name = lockName(`${label}-inspect`);
      const lock = subject.make(await clients.client(), name);
      assert.deepEqual((await lock.inspect()).heldBy, [], 'a free lock has no holders');
      const mode = offered.leases === 'session' ? 'session' : 'watchdog';
      const config = processes!.config({ sessionTimeoutMs: 30_000, watchdogTimeoutMs: 30_000 });
      // Readers have no bound: two of them, each named.
      const holds = Number.isFinite(subject.bound) ? subject.bound : 2;
      const hold = { subject: label, name, mode, ms: 30_000, holds, label: 'contract-holder' };
      const [holder] = forkHolders(module!, config, hold);
      try {
        const { pid, host } = (await holder!.next('acquired')) as unknown as { pid: number; host: string };
        assert.notEqual(pid, process.pid);
        const info = await lock.inspect();
        const heldBy = [...(info.heldBy ?? [])].sort((x, y) => x.owner.localeCompare(y.owner));
        assert.equal(heldBy.length, holds, JSON.stringify(info));
        heldBy.forEach((entry, i) => {
          assert.equal(entry.owner, `holder-${pid}-${i}`);
          assert.equal(entry.pid, pid);
          assert.equal(entry.host, host);
          assert.equal(entry.label, 'contract-holder');
          assert.equal(typeof entry.acquiredAt, 'number');
        });
      } finally {
        holder!.kill('SIGKILL');
      }
    },
  );

  add(
    'every pending acquire of a closed client rejects with LockClientClosedError',
    mixedSkip || elsewhere,
    async (clients, offered) => {
      // The holder is another OS process: no release or wake-up from this one can settle a waiter.
      // It holds what blocks the subject (readers: the write side) and stays for every round.
      const name = lockName(`${label}-closed`);
      const holderSubject = subject.opposite ? 'write' : label;
      const holds = subject.opposite ? 1 : subject.bound;
      const mode = offered.leases === 'session' ? 'session' : 'watchdog';
      const config = processes!.config({ sessionTimeoutMs: 30_000, watchdogTimeoutMs: 30_000 });
      const [holder] = forkHolders(module!, config, {
        subject: holderSubject,
        name,
        mode,
        ms: 30_000,
        holds,
      });
      const closing: Array<Promise<void>> = [];
      try {
        await holder!.next('acquired');
        for (let round = 0; round < CLOSE_ROUNDS; round++) {
          const client = await clients.client();
          const lock = subject.make(client, name);
          // Waiters without waitMs, in different phases when the client closes: the first still in
          // its first try, later ones queued behind it or asleep on their watch or wake-up.
          // (Each outcome is watched from the start: a rejection is never left unhandled.)
          const outcomes = [lock.acquire(), lock.acquire()].map((p) => settlement(p, 30_000));
          // Spreads the close over the waiters' phases (0: their first tries are in flight).
          if (round % 4 === 1) await new Promise((resolve) => setImmediate(resolve));
          else if (round % 4 >= 2) await new Promise((resolve) => setTimeout(resolve, round * 5));
          outcomes.push(settlement(lock.acquire(), 30_000));
          // What is checked is the acquires, not how long close() takes: PostgreSQL's can take a
          // server-side wait's whole time slice (10 s) to end. The closes are awaited at the end.
          closing.push(client.close());
          for (const [i, outcome] of (await Promise.all(outcomes)).entries()) {
            assertInstance(outcome, LockClientClosedError, `round ${round}, waiter ${i}: `);
          }
        }
        await Promise.all(closing);
      } finally {
        holder!.kill('SIGKILL');
        await holder!.exited;
      }
    },
    180_000,
  );

  add('reports acquire, hold and release on the diagnostics channels', mixedSkip, async (clients) => {
    const name = lockName(`${label}-diagnostics`);
    await checkChannels(subject.make(await clients.client(), name), name, label === 'multi-lock' ? 2 : 1);
  });

  add(
    're-entry within a run() task keeps the token',
    mixedSkip || (!subject.reentrant && 'not reentrant'),
    async (clients) => {
      const lock = subject.make(await clients.client(), lockName(label));
      await lock.run(async (_signal, outer) => {
        const inner = await lock.acquire({ waitMs: 2_000 });
        assert.equal(inner.fencingToken, outer.fencingToken);
        assert.equal(await inner.release(), 'still_held');
        assert.equal(await lock.isLocked(), true);
      });
      assert.equal(await lock.isLocked(), false);
    },
  );
}
