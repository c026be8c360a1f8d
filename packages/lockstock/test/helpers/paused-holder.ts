import { Redis } from 'ioredis';
import { expect } from 'vitest';
import { checkLockHistory, type HistoryEvent, type LockCheckReport } from '../../src/checker/index.js';
import { RedisFencedStore, type LockHandle } from '../../src/index.js';
import { lossSeen, mergeHistories, msSince, type Fixtures, type LossReport } from './crash.js';
import { HistoryRecorder } from './recorder.js';

export interface PausedPastLease {
  readonly fixtures: Fixtures;
  readonly name: string;
  /** The holder's backend, as test/contract/subjects.mjs connects to it (its watchdog lease set). */
  readonly backend: object;
  /** A Redis for the fenced resource (RedisFencedStore) and the unfenced list beside it. */
  readonly resourceUrl: string;
  /** The other client's acquire, in this process. */
  take(name: string): Promise<LockHandle>;
}

export interface PausedOutcome {
  readonly report: LockCheckReport;
  /** From the SIGSTOP to the other client's grant, ms. */
  readonly takenAfterMs: number;
  /** When the resumed holder's signal aborted, in words (and ms after SIGCONT). */
  readonly seen: { words: string; ms?: number };
}

/**
 * Fault row 2 (RELIABILITY.md §3.2, "holder SIGSTOP > lease, then SIGCONT") for any leased backend: a
 * holder process (fixtures/fault-holder.mjs, kind 'contract') holds a mutex with a watchdog-renewed
 * lease and is SIGSTOPped; a client of this process asks and gets the lock once the lease ran out, and
 * writes through the fence; the holder is resumed and writes as if it still held the lock, not
 * looking at its signal. A lease cannot prevent that: the checker (strict: how long they acted) must
 * FIND the two holders, and the fenced resource must refuse the stale write and accept nothing stale.
 */
export async function pausePastLease(options: PausedPastLease): Promise<PausedOutcome> {
  const { fixtures, name } = options;
  const paused = fixtures.fork('fault-holder.mjs', {
    kind: 'contract',
    backend: options.backend,
    resourceUrl: options.resourceUrl,
    name,
    history: fixtures.historyFile(name),
  });
  const redis = new Redis(options.resourceUrl);
  try {
    const { token, owner } = await paused.next('holding');
    const recorder = new HistoryRecorder();
    recorder.fault('sigstop', owner);
    paused.kill('SIGSTOP');
    const stoppedAt = process.hrtime.bigint();
    const second = await recorder.acquire('second', name, () => options.take(name));
    const takenAfterMs = msSince(stoppedAt);
    expect(second.fencingToken).toBeGreaterThan(token as number);
    const store = new RedisFencedStore(redis);
    expect(await recorder.write(store, `fenced/${name}`, 'from second', second)).toBe(true);

    const resumedAt = process.hrtime.bigint(); // before the signal: the holder may run before kill() returns
    paused.kill('SIGCONT');
    recorder.fault('sigcont', owner);
    paused.send({ type: 'write', value: 'stale' });
    const written = await paused.next('written');
    paused.send({ type: 'release' });
    const released = await paused.next('released');
    await recorder.release('second', name, second);

    expect(written.accepted).toBe(false);
    expect(await store.read(`fenced/${name}`)).toBe('from second');
    expect(await redis.lrange(`unfenced/${name}`, 0, -1)).toEqual([`stale from ${String(owner)}`]);
    expect(released.outcome).not.toBe('released'); // its lease was gone: nothing of its to release
    const events: HistoryEvent[] = fixtures.histories().filter((e) => e.proc === owner || e.owner === owner);
    const report = checkLockHistory(mergeHistories(recorder.events, events), { strict: true });
    expect(report.checks.exclusion.valid).toBe(false);
    expect(report.checks.exclusion.violations[0]?.owners).toEqual(expect.arrayContaining(['second', owner]));
    expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 1 });
    expect(report.checks.tokens.valid).toBe(true);
    const seen = lossSeen(released.lost as LossReport | undefined, resumedAt, 'SIGCONT');
    return { report, takenAfterMs, seen };
  } finally {
    paused.kill('SIGCONT');
    redis.disconnect();
  }
}
