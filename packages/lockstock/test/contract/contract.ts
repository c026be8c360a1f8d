import diagnostics_channel from 'node:diagnostics_channel';
import { describe, expect, it } from 'vitest';
import {
  LOCK_CHANNELS,
  LockAbortedError,
  LockClientClosedError,
  LockLostError,
  LockTimeoutError,
  type Lock,
  type LockClient,
  type LockHandle,
  type LockLostEvent,
} from '../../src/index.js';
import {
  checkLinearizable,
  checkLockHistory,
  mutexModel,
  operationsOf,
  semaphoreModel,
  type Model,
} from '../../src/checker/index.js';
import { runBoundProbe } from '../helpers/bound-probe.js';
import { forkFixtures } from '../helpers/processes.js';
import type { BackendFixture } from './backends.js';
import { SUBJECTS, type Subject } from './subjects.mjs';

const PROCESSES = 4;
const LOOPS = 2;
const SECTIONS = 15;
const LEASE_MS = 1_000;

let unique = 0;
const lockName = (label: string) => `contract-${label}-${process.pid}-${++unique}`;

/**
 * Takes enough holds that the next acquire of `subject` must wait: the opposite side's lock for
 * readers, otherwise as many holds as the kind admits, each under its own owner.
 */
async function occupy(subject: Subject, client: LockClient, name: string): Promise<LockHandle[]> {
  if (subject.opposite) return [await subject.opposite(client, name).acquire()];
  const lock = subject.make(client, name);
  const holds: LockHandle[] = [];
  for (let i = 0; i < subject.bound; i++) holds.push(await lock.acquire({ owner: `occupant-${i}` }));
  return holds;
}

const releaseAll = (holds: LockHandle[]) => Promise.all(holds.map((h) => h.release()));

/** Rounds of the close race: each closes a client at another moment of its waiters' acquires. */
const CLOSE_ROUNDS = 20;

/** How `promise` settled, or 'pending' if it had not within `ms` (a bound, not a synchronisation). */
function settlement(promise: Promise<unknown>, ms: number): Promise<unknown> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve('pending'), ms);
    promise.then(
      (value) => (clearTimeout(timer), resolve(value)),
      (error: unknown) => (clearTimeout(timer), resolve(error)),
    );
  });
}

type Seen = { event: string; message: Record<string, unknown> };

/**
 * Records what the diagnostics channels publish about locks whose names start with `name` (each
 * message copied as it was when published) while `fn` runs.
 */
async function recordChannels(name: string, fn: () => Promise<void>): Promise<Seen[]> {
  const seen: Seen[] = [];
  const record = (event: string) => (message: unknown) => {
    const fields = message as Record<string, unknown>;
    if (String(fields.name).startsWith(name)) seen.push({ event, message: { ...fields } });
  };
  const tracing = {
    start: record('start'),
    end: record('end'),
    asyncStart: record('asyncStart'),
    asyncEnd: record('asyncEnd'),
    error: record('error'),
  };
  const acquire = diagnostics_channel.tracingChannel(LOCK_CHANNELS.acquire);
  const plain = Object.entries(LOCK_CHANNELS)
    .filter(([event]) => event !== 'acquire')
    .map(([event, channel]) => [channel, record(event)] as const);
  acquire.subscribe(tracing);
  for (const [channel, listener] of plain) diagnostics_channel.subscribe(channel, listener);
  try {
    await fn();
  } finally {
    acquire.unsubscribe(tracing);
    for (const [channel, listener] of plain) diagnostics_channel.unsubscribe(channel, listener);
  }
  return seen;
}

const keys = (message: Record<string, unknown>) => Object.keys(message).sort();

function nextLost(client: LockClient, name: string): Promise<LockLostEvent> {
  const events = client as unknown as NodeJS.EventEmitter;
  return new Promise((resolve) => {
    const listener = (event: LockLostEvent) => {
      if (!event.name.startsWith(name)) return;
      events.off('lost', listener);
      resolve(event);
    };
    events.on('lost', listener);
  });
}

/**
 * The lock contract, written against the public API only, for every kind it applies to. A backend's
 * suite file calls it with its fixture; the same checks run unchanged for every backend.
 */
export function lockContract(
  backend: BackendFixture<unknown>,
  subjects: readonly string[] = Object.keys(SUBJECTS),
): void {
  describe.each(subjects)('%s', (label) => {
    const subject = SUBJECTS[label] as Subject;
    const mixedOnly = subject.mixed !== undefined;

    it.skipIf(subject.bound === Infinity && !mixedOnly)(
      `holds its bound across ${PROCESSES} ${backend.inProcess ? 'clients of one process' : 'OS processes'}`,
      async () => {
        const name = lockName(label);
        const { records, report, counter, exclusive, events } = await (backend.probe ?? runBoundProbe)({
          backend: backend.config({ watchdogTimeoutMs: 5_000 }),
          subject: label,
          name,
          probeUrl: backend.probeUrl,
          processes: PROCESSES,
          loops: LOOPS,
          sections: SECTIONS,
        });
        expect(new Set(records.map((r) => r.pid)).size).toBe(PROCESSES);
        expect(records.every((r) => r.outcome === 'released')).toBe(true);
        expect(report.sections).toBe(PROCESSES * LOOPS * SECTIONS);
        expect(report.overlaps).toBe(0);
        expect(report.tokenRegressions).toBe(0);
        expect(report.maxInside).toBeLessThanOrEqual(subject.bound);
        expect(report.maxConcurrent).toBeLessThanOrEqual(subject.bound);
        expect(counter).toBe(exclusive); // no lost update: exclusive sections really were alone
        if (subject.bound > 1 && subject.bound !== Infinity) expect(report.maxInside).toBeGreaterThan(1);
        expect(new Set(records.map((r) => r.token)).size).toBe(records.length);
        // The same sections as a history, checked by lockstock/checker: linearizable against a fenced
        // mutex (tokens grow in the order the lock passed) or a semaphore of the bound.
        if (!mixedOnly) {
          const model = subject.bound === 1 ? mutexModel({ fenced: true }) : semaphoreModel(subject.bound);
          const verdict = checkLinearizable(operationsOf(events), model as Model<unknown>, {
            timeoutMs: 20_000,
          });
          expect(verdict.valid, JSON.stringify(verdict.counterexample)).toBe(true);
          if (subject.bound === 1) expect(checkLockHistory(events).valid).toBe(true);
        }
      },
    );

    it.skipIf(mixedOnly)('try, timeout and abort leave nothing behind', async () => {
      const client = backend.client();
      const name = lockName(label);
      const lock = subject.make(client, name);
      const holds = await occupy(subject, backend.client(), name);
      expect(await lock.tryAcquire()).toBeUndefined();
      expect(await lock.tryAcquire({ waitMs: 30 })).toBeUndefined();
      await expect(lock.acquire({ waitMs: 30 })).rejects.toBeInstanceOf(LockTimeoutError);
      const controller = new AbortController();
      const aborted = lock.acquire({ signal: controller.signal });
      controller.abort(new Error('gave up'));
      await expect(aborted).rejects.toBeInstanceOf(LockAbortedError);
      await releaseAll(holds);
      // None of the refused or abandoned attempts holds anything: the lock is free for a newcomer.
      const handle = await lock.acquire({ waitMs: 5_000 });
      expect(await handle.release()).toBe('released');
      // A server-side wait granted just after its waiter gave up is given back in the background (a
      // waiter's leave is fire and forget); a shared newcomer does not wait for that: look until it is.
      await expect.poll(() => lock.isLocked(), { timeout: 5_000 }).toBe(false);
    });

    it.skipIf(mixedOnly || !subject.leased)(
      'only the owner releases; a stale release changes nothing',
      async () => {
        const [a, b] = [backend.client(), backend.client()];
        const name = lockName(label);
        const stale = await subject.make(a, name).acquire();
        await backend.breakHolds(a, subject.make(a, name)); // its hold ends behind its back
        const fresh = await subject.make(b, name).acquire({ waitMs: 5_000 });
        expect(['not_owner', 'expired']).toContain(await stale.release());
        expect(await subject.make(b, name).isLocked()).toBe(true);
        expect(await fresh.release()).toBe('released');
      },
    );

    it.skipIf(mixedOnly || backend.inProcess)(
      subject.leased
        ? 'a SIGKILLed holder frees it within its lease'
        : 'a SIGKILLed holder keeps its permit for good (no lease)',
      async () => {
        // A backend whose session carries the holds (no lease per hold) frees them when the session
        // of the killed holder times out: its config sets that timeout to the lease.
        const session = backend.capabilities.leases === 'session';
        const modes = !subject.leased ? ['watchdog'] : session ? ['session'] : ['lease', 'watchdog'];
        for (const mode of modes) {
          const name = lockName(`${label}-${mode}`);
          const holds = subject.opposite ? 1 : subject.bound;
          const config = session ? backend.config({ sessionTimeoutMs: LEASE_MS }) : backend.config();
          const [holder] = forkFixtures('holder.mjs', [
            [JSON.stringify({ backend: config, subject: label, name, mode, ms: LEASE_MS, holds })],
          ]);
          const acquired = await holder!.next('acquired');
          const client = backend.client();
          const blocked = subject.opposite ? subject.opposite(client, name) : subject.make(client, name);
          expect(await blocked.tryAcquire()).toBeUndefined();
          holder!.kill('SIGKILL');
          expect((await holder!.exited)[1]).toBe('SIGKILL');
          const killedAt = performance.now();
          // Nobody releases it: only the lease running out can let us in.
          const handle = await blocked.tryAcquire({ waitMs: LEASE_MS + 3_000 });
          if (!subject.leased) {
            expect(handle).toBeUndefined();
            continue;
          }
          expect(handle).toBeDefined();
          expect(performance.now() - killedAt).toBeLessThanOrEqual(LEASE_MS + 1_500);
          expect(handle!.fencingToken).toBeGreaterThan(Math.max(...(acquired.tokens as number[])));
          await handle!.release();
        }
      },
    );

    it.skipIf(mixedOnly || !subject.leased)('a lost lease aborts the signal and is reported', async () => {
      const client = backend.client({ watchdogTimeoutMs: 300 });
      const name = lockName(label);
      const lock = subject.make(client, name);
      const handle = await lock.acquire();
      const lost = nextLost(client, name);
      await backend.breakHolds(client, lock);
      // A backend that watches its holds may report the loss before breakHolds returns.
      if (!handle.signal.aborted) {
        await new Promise((resolve) => handle.signal.addEventListener('abort', resolve, { once: true }));
      }
      expect(handle.signal.reason).toBeInstanceOf(LockLostError);
      expect(handle.lostError).toBeInstanceOf(LockLostError);
      expect((await lost).error).toBeInstanceOf(LockLostError);
      await handle.release();
    });

    it.skipIf(mixedOnly)('fencing tokens strictly increase across holders', async () => {
      const [a, b] = [backend.client(), backend.client()];
      const name = lockName(label);
      const tokens: number[] = [];
      for (let i = 0; i < 6; i++) {
        const lock: Lock = subject.make(i % 2 ? a : b, name);
        const handle = await lock.acquire({ owner: `owner-${i}` });
        tokens.push(handle.fencingToken);
        await handle.release();
      }
      for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]!);
    });

    it.skipIf(mixedOnly || backend.inProcess)(
      'every pending acquire of a closed client rejects with LockClientClosedError',
      { timeout: 180_000 },
      async () => {
        // The holder is another OS process: no release or wake-up from this one can settle a waiter.
        // It holds what blocks the subject (readers: the write side) and stays for every round.
        const name = lockName(`${label}-closed`);
        const holderSubject = subject.opposite ? 'write' : label;
        const holds = subject.opposite ? 1 : subject.bound;
        const mode = backend.capabilities.leases === 'session' ? 'session' : 'watchdog';
        const config = backend.config({ sessionTimeoutMs: 30_000 });
        const [holder] = forkFixtures('holder.mjs', [
          [JSON.stringify({ backend: config, subject: holderSubject, name, mode, ms: 30_000, holds })],
        ]);
        const closing: Array<Promise<void>> = [];
        try {
          await holder!.next('acquired');
          for (let round = 0; round < CLOSE_ROUNDS; round++) {
            const client = backend.client();
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
              expect(outcome, `round ${round}, waiter ${i}`).toBeInstanceOf(LockClientClosedError);
            }
          }
          await Promise.all(closing);
        } finally {
          holder!.kill('SIGKILL');
          await holder!.exited;
        }
      },
    );

    it.skipIf(mixedOnly)('reports acquire, hold and release on the diagnostics channels', async () => {
      const client = backend.client();
      const name = lockName(`${label}-diagnostics`);
      const lock = subject.make(client, name);
      const seen = await recordChannels(name, async () => {
        const handle = await lock.acquire({ waitMs: 5_000 });
        expect(await handle.release()).toBe('released');
      });
      // One acquire per lock (a multi-lock's parts each report their own), the same shape everywhere.
      const names = [...new Set(seen.map((s) => s.message.name as string))];
      expect(names.length).toBe(label === 'multi-lock' ? 2 : 1);
      for (const part of names) {
        const mine = seen.filter((s) => s.message.name === part);
        expect(mine.map((s) => s.event)).toEqual([
          'start',
          'end',
          'asyncStart',
          'asyncEnd',
          'release',
          'hold',
        ]);
        const [start, , , done, release, hold] = mine.map((s) => s.message) as Array<Record<string, unknown>>;
        expect(keys(start!)).toEqual(['backend', 'kind', 'name', 'owner', 'waitLimitMs']);
        // (A multi-lock's part is given what is left of the wait.)
        expect(start!.waitLimitMs).toBeGreaterThan(4_000);
        expect(start!.waitLimitMs).toBeLessThanOrEqual(5_000);
        for (const message of [start, done, release, hold]) {
          expect(message).toMatchObject({
            name: part,
            kind: start!.kind,
            backend: start!.backend,
            owner: start!.owner,
          });
        }
        expect(typeof start!.kind).toBe('string');
        expect(start!.backend).toMatch(/^[a-z-]+$/);
        expect(keys(done!)).toEqual(
          [...keys(start!), 'fencingToken', 'handle', 'outcome', 'result', 'waitMs'].sort(),
        );
        expect(done).toMatchObject({ outcome: 'acquired', fencingToken: expect.any(Number) });
        expect(done!.waitMs).toBeGreaterThanOrEqual(0);
        expect(done!.result).toBe(done!.handle);
        expect(keys(release!)).toEqual(
          [
            'backend',
            'fencingToken',
            'handle',
            'heldMs',
            'kind',
            'name',
            'outcome',
            'owner',
            'releaseMs',
          ].sort(),
        );
        expect(release).toMatchObject({ outcome: 'released', fencingToken: done!.fencingToken });
        expect(release!.handle).toBe(done!.handle);
        expect(release!.releaseMs).toBeGreaterThanOrEqual(0);
        expect(keys(hold!)).toEqual(
          ['backend', 'ended', 'fencingToken', 'handle', 'heldMs', 'kind', 'name', 'outcome', 'owner'].sort(),
        );
        expect(hold).toMatchObject({
          ended: 'released',
          outcome: 'released',
          fencingToken: done!.fencingToken,
        });
        expect(hold!.handle).toBe(done!.handle);
        expect(hold!.heldMs).toBeGreaterThanOrEqual(0);
      }
    });

    it.skipIf(mixedOnly || !subject.reentrant)('re-entry within a run() task keeps the token', async () => {
      const client = backend.client();
      const lock = subject.make(client, lockName(label));
      await lock.run(async (_signal, outer) => {
        const inner = await lock.acquire({ waitMs: 2_000 });
        expect(inner.fencingToken).toBe(outer.fencingToken);
        expect(await inner.release()).toBe('still_held');
        expect(await lock.isLocked()).toBe(true);
      });
      expect(await lock.isLocked()).toBe(false);
    });
  });
}
