import { describe, expect, it } from 'vitest';
import { checkLockHistory, type HistoryEvent } from '../../src/checker/index.js';

/** Events at times 0, 10, 20… in the order given. */
const at = (events: Array<Omit<HistoryEvent, 't'>>): HistoryEvent[] =>
  events.map((event, i) => ({ ...event, t: String(i * 10) }) as HistoryEvent);

const acquire = (proc: string, token: number, extra: Record<string, unknown> = {}) => [
  { proc, type: 'invoke' as const, f: 'acquire', ...extra },
  { proc, type: 'ok' as const, f: 'acquire', owner: proc, token, ...extra },
];
const release = (proc: string) => [
  { proc, type: 'invoke' as const, f: 'release' },
  { proc, type: 'ok' as const, f: 'release' },
];

describe('direct lock checks', () => {
  it('a clean history passes every check', () => {
    const report = checkLockHistory(
      at([...acquire('a', 1), ...release('a'), ...acquire('b', 2), ...release('b')]),
    );
    expect(report.valid).toBe(true);
    expect(report.checks.exclusion.violations).toEqual([]);
  });

  it('overlap: a second holder before the first released, reported with both owners and how long', () => {
    const report = checkLockHistory(
      at([...acquire('a', 1), ...acquire('b', 2), ...release('a'), ...release('b')]),
    );
    expect(report.checks.exclusion.violations).toEqual([
      { lock: 'lock', owners: ['a', 'b'], at: '30', overlapNs: '10' },
    ]);
    expect(report.valid).toBe(false);
  });

  it("a lease's valid_until ends the belief (unless strict); touching holds do not overlap", () => {
    const events = at([
      { proc: 'a', type: 'invoke', f: 'acquire' },
      { proc: 'a', type: 'ok', f: 'acquire', owner: 'a', token: 1, valid_until: '15' },
      ...acquire('b', 2),
      ...release('a'),
    ]);
    expect(checkLockHistory(events).checks.exclusion.valid).toBe(true);
    expect(checkLockHistory(events, { strict: true }).checks.exclusion.valid).toBe(false);
  });

  it("a harness kill ends the victim's holds (a dead process acts no more); other processes' stay", () => {
    const kill = (target: string) => ({
      src: 'harness',
      proc: 'harness',
      type: 'info' as const,
      f: 'fault',
      fault: 'kill',
      target,
    });
    const killed = at([...acquire('a', 1), kill('a'), ...acquire('b', 2), ...release('b')]);
    expect(checkLockHistory(killed, { strict: true }).checks.exclusion.valid).toBe(true);
    // Without the kill, a's hold lasts to the end of the history: the overlap is found.
    const unkilled = at([...acquire('a', 1), ...acquire('b', 2), ...release('b')]);
    expect(checkLockHistory(unkilled).checks.exclusion.valid).toBe(false);
    // Killing another process ends nothing of a's.
    const other = at([...acquire('a', 1), kill('c'), ...acquire('b', 2), ...release('b')]);
    expect(checkLockHistory(other).checks.exclusion.valid).toBe(false);
  });

  it('a hold released the instant it was granted overlaps nothing after it (found by test/sim)', () => {
    // Granted and released at one time: the sweep met the end before the start and kept the hold
    // open for ever, so every later holder overlapped it.
    const events: HistoryEvent[] = [
      { proc: 'a', type: 'invoke', f: 'acquire', t: 0 },
      { proc: 'a', type: 'ok', f: 'acquire', owner: 'a', token: 1, t: 10 },
      { proc: 'a', type: 'invoke', f: 'release', t: 10 },
      { proc: 'a', type: 'ok', f: 'release', t: 20 },
      ...[...acquire('b', 2), ...release('b')].map((e, i) => ({ ...e, t: 30 + i * 10 }) as HistoryEvent),
    ];
    const report = checkLockHistory(events);
    expect(report.checks.exclusion.violations).toEqual([]);
    expect(report.valid).toBe(true);
  });

  it('permits and read-write modes', () => {
    const permit = (proc: string, token: number) => acquire(proc, token, { mode: 'p', permits: 2 });
    expect(checkLockHistory(at([...permit('a', 1), ...permit('b', 2)])).checks.exclusion.valid).toBe(true);
    expect(
      checkLockHistory(at([...permit('a', 1), ...permit('b', 2), ...permit('c', 3)])).checks.exclusion.valid,
    ).toBe(false);
    const read = (proc: string, token: number) => acquire(proc, token, { mode: 'r' });
    expect(checkLockHistory(at([...read('a', 1), ...read('b', 2)])).checks.exclusion.valid).toBe(true);
    const write = (proc: string, token: number) => acquire(proc, token, { mode: 'w' });
    expect(checkLockHistory(at([...read('a', 1), ...write('b', 2)])).checks.exclusion.valid).toBe(false);
  });

  it('tokens: a later acquire (begun after another completed) with a smaller token', () => {
    const report = checkLockHistory(
      at([...acquire('a', 5), ...release('a'), ...acquire('b', 4), ...release('b')]),
    );
    expect(report.checks.tokens.violations).toEqual([{ lock: 'lock', earlier: 'a@5', later: 'b@4' }]);
    // Compared with the greatest earlier token of ANOTHER owner: a re-acquire by a is held to b's 6.
    const again = checkLockHistory(
      at([...acquire('a', 5), ...release('a'), ...acquire('b', 6), ...release('b'), ...acquire('a', 6)]),
    );
    expect(again.checks.tokens.violations).toEqual([{ lock: 'lock', earlier: 'b@6', later: 'a@6' }]);
    const fine = checkLockHistory(
      at([...acquire('a', 5), ...release('a'), ...acquire('b', 6), ...release('b'), ...acquire('a', 7)]),
    );
    expect(fine.checks.tokens.valid).toBe(true);
  });

  it("tokens: a reader's re-entry keeps its token, smaller than a reader's granted meanwhile (found by test/sim)", () => {
    const reads = { mode: 'r' };
    const report = checkLockHistory(
      at([
        ...acquire('a', 3, reads),
        ...acquire('b', 4, reads),
        ...acquire('a', 3, reads), // a re-enters: its hold's token, 3
        ...release('a'),
        ...release('a'),
        ...release('b'),
      ]),
    );
    expect(report.checks.tokens.violations).toEqual([]);
    // A new owner given an old token is still a violation.
    const stale = checkLockHistory(
      at([...acquire('a', 3, reads), ...acquire('b', 4, reads), ...acquire('c', 3, reads)]),
    );
    expect(stale.checks.tokens.violations).toEqual([{ lock: 'lock', earlier: 'b@4', later: 'c@3' }]);
  });

  it('fence at the resource: a stale write accepted, an equal token from another owner, a needless refusal', () => {
    const write = (type: 'ok' | 'fail', token: number, owner: string) =>
      ({
        src: 'resource',
        proc: 'res',
        type,
        f: 'write',
        res: 'inv',
        token,
        owner,
        ...(type === 'fail' ? { error: 'fence' } : {}),
      }) as const;
    const clean = checkLockHistory(at([write('ok', 1, 'a'), write('ok', 2, 'b'), write('fail', 1, 'a')]));
    expect(clean.checks.fence).toMatchObject({ valid: true, rejectedStale: 1 });
    const stale = checkLockHistory(at([write('ok', 2, 'b'), write('ok', 1, 'a')]));
    expect(stale.checks.fence).toMatchObject({ valid: false, acceptedStale: 1 });
    const sameToken = checkLockHistory(at([write('ok', 2, 'b'), write('ok', 2, 'c')]));
    expect(sameToken.checks.fence.acceptedStale).toBe(1);
    const needless = checkLockHistory(at([write('ok', 1, 'a'), write('fail', 2, 'b')]));
    expect(needless.checks.fence.refusedNeedlessly).toBe(1);
    // Each one named: the resource, the writer, and what the resource had accepted before.
    expect(stale.checks.fence.violations).toEqual([
      {
        res: 'inv',
        kind: 'accepted-stale',
        owner: 'a',
        token: '1',
        at: '10',
        latest: { token: '2', owner: 'b' },
      },
    ]);
    expect(needless.checks.fence.violations).toEqual([
      {
        res: 'inv',
        kind: 'refused-needlessly',
        owner: 'b',
        token: '2',
        at: '10',
        latest: { token: '1', owner: 'a' },
      },
    ]);
  });
});

describe('release only by the holder (L2)', () => {
  const releaseAs = (proc: string, extra: Record<string, unknown> = {}) => [
    { proc, type: 'invoke' as const, f: 'release' },
    { proc, type: 'ok' as const, f: 'release', ...extra },
  ];

  it('passes holders releasing, re-entered holds released level by level', () => {
    const report = checkLockHistory(
      at([
        ...acquire('a', 1),
        ...acquire('a', 1),
        ...release('a'),
        ...release('a'),
        ...acquire('b', 2),
        ...release('b'),
      ]),
    );
    expect(report.checks.ownership).toEqual({ valid: true, violations: [] });
    expect(report.valid).toBe(true);
  });

  it('a release that took effect for a process that never held the lock, while another held it', () => {
    const report = checkLockHistory(at([...acquire('a', 1), ...releaseAs('b'), ...release('a')]));
    expect(report.checks.ownership.violations).toEqual([
      { lock: 'lock', proc: 'b', owner: 'b', at: '20', holders: ['a'] },
    ]);
    expect(report.valid).toBe(false);
    // The service refused it: no violation.
    const refused = checkLockHistory(
      at([...acquire('a', 1), ...releaseAs('b', { outcome: 'not_owner' }), ...release('a')]),
    );
    expect(refused.checks.ownership.valid).toBe(true);
    // It failed (an error): no effect, no violation.
    const failed = checkLockHistory(
      at([
        ...acquire('a', 1),
        { proc: 'b', type: 'invoke', f: 'release' },
        { proc: 'b', type: 'fail', f: 'release', error: 'NotLockOwnerError' },
        ...release('a'),
      ]),
    );
    expect(failed.checks.ownership.valid).toBe(true);
  });

  it('a release by an owner the service had already given the lock away from, or released twice', () => {
    // a's lease ran out and b was granted: a's release answered 'released' released b's lock.
    const overtaken = checkLockHistory(
      at([
        { proc: 'a', type: 'invoke', f: 'acquire' },
        { proc: 'a', type: 'ok', f: 'acquire', owner: 'a', token: 1, valid_until: '15' },
        ...acquire('b', 2),
        ...releaseAs('a', { outcome: 'released' }),
        ...release('b'),
      ]),
    );
    expect(overtaken.checks.exclusion.valid).toBe(true); // a's belief ended with its lease…
    expect(overtaken.checks.ownership.violations).toEqual([
      { lock: 'lock', proc: 'a', owner: 'a', at: '40', holders: ['b'] },
    ]); // …but its release still took effect
    // Answered 'expired' (or 'not_owner'), as lockstock answers it: nothing was changed.
    const answered = checkLockHistory(
      at([
        { proc: 'a', type: 'invoke', f: 'acquire' },
        { proc: 'a', type: 'ok', f: 'acquire', owner: 'a', token: 1, valid_until: '15' },
        ...acquire('b', 2),
        ...releaseAs('a', { outcome: 'expired' }),
        ...release('b'),
      ]),
    );
    expect(answered.checks.ownership.valid).toBe(true);
    const twice = checkLockHistory(at([...acquire('a', 1), ...release('a'), ...release('a')]));
    expect(twice.checks.ownership.violations).toEqual([
      { lock: 'lock', proc: 'a', owner: 'a', at: '40', holders: [] },
    ]);
    // An explicit owner on the release is the owner checked (a process releasing another's hold).
    const named = checkLockHistory(
      at([
        ...acquire('a', 1),
        { proc: 'c', type: 'invoke', f: 'release', owner: 'a' },
        { proc: 'c', type: 'ok', f: 'release' },
      ]),
    );
    expect(named.checks.ownership.valid).toBe(true);
  });

  it("a lost hold's release the service refused ends nothing of its owner's re-entry; one that took effect does", () => {
    // o's hold (process a) is lost and given to b; o enters again (process a/r, or a itself on a fair
    // lock); a's release of the lost handle answers 'expired' (lockstock does not send it: the store
    // releases by owner), then the re-entry releases for real.
    const history = (reentry: string, lostOutcome: string) =>
      at([
        { proc: 'a', type: 'invoke', f: 'acquire' },
        { proc: 'a', type: 'ok', f: 'acquire', owner: 'o', token: 1 },
        { proc: 'a', type: 'ok', f: 'lost' },
        ...acquire('b', 2),
        ...release('b'),
        { proc: reentry, type: 'invoke', f: 'acquire' },
        { proc: reentry, type: 'ok', f: 'acquire', owner: 'o', token: 3 },
        { proc: 'a', type: 'invoke', f: 'release', owner: 'o' },
        { proc: 'a', type: 'ok', f: 'release', owner: 'o', outcome: lostOutcome },
        { proc: reentry, type: 'invoke', f: 'release', owner: 'o' },
        { proc: reentry, type: 'ok', f: 'release', owner: 'o', outcome: 'released' },
      ]);
    for (const reentry of ['a/r', 'a']) {
      expect(checkLockHistory(history(reentry, 'expired')).checks.ownership.violations, reentry).toEqual([]);
      // The lost handle's release took effect: it ended the re-entry's grant, whose own release then
      // took effect while o held nothing.
      expect(checkLockHistory(history(reentry, 'released')).checks.ownership.violations, reentry).toEqual([
        { lock: 'lock', proc: reentry, owner: 'o', at: '110', holders: [] },
      ]);
    }
  });

  it("shared holds are not superseded; a killed holder's grant ends with its process", () => {
    const read = (proc: string, token: number) => acquire(proc, token, { mode: 'r' });
    expect(
      checkLockHistory(at([...read('a', 1), ...read('b', 2), ...releaseAs('a', { lock: 'lock' })])).checks
        .ownership.valid,
    ).toBe(true);
    const kill = {
      src: 'harness',
      proc: 'harness',
      type: 'info' as const,
      f: 'fault',
      fault: 'kill',
      target: 'a',
    };
    const afterKill = checkLockHistory(at([...acquire('a', 1), kill, ...releaseAs('a')]));
    expect(afterKill.checks.ownership.valid).toBe(false);
  });
});

describe('FIFO order of fair locks (L6)', () => {
  const queued = (proc: string) => ({ proc, type: 'ok' as const, f: 'queued' });
  const invoke = (proc: string) => ({ proc, type: 'invoke' as const, f: 'acquire' });
  const granted = (proc: string, token: number) => ({
    proc,
    type: 'ok' as const,
    f: 'acquire',
    owner: proc,
    token,
  });
  // h holds; A queues (known), then B begins; h releases; then the grants in the order given.
  const served = (first: string, second: string) =>
    at([
      ...acquire('h', 1),
      invoke('A'),
      queued('A'),
      invoke('B'),
      ...release('h'),
      granted(first, 2),
      ...release(first),
      granted(second, 3),
      ...release(second),
    ]);

  it('passes when the waiter known to be queued first is granted first', () => {
    const report = checkLockHistory(served('A', 'B'), { fair: true });
    expect(report.checks.fifo).toEqual({ valid: true, checked: true, violations: [] });
    expect(report.valid).toBe(true);
  });

  it('reports a later waiter granted first, naming both', () => {
    const report = checkLockHistory(served('B', 'A'), { fair: true });
    expect(report.checks.fifo.violations).toEqual([
      { lock: 'lock', overtaken: 'A', by: 'B', queuedAt: '30', invokedAt: '40', grantedAt: '70' },
    ]);
    expect(report.valid).toBe(false);
    // Not a fair lock (the default, or another name): unchecked.
    expect(checkLockHistory(served('B', 'A')).checks.fifo).toEqual({
      valid: true,
      checked: false,
      violations: [],
    });
    expect(checkLockHistory(served('B', 'A'), { fair: ['other'] }).checks.fifo.valid).toBe(true);
    expect(checkLockHistory(served('B', 'A'), { fair: ['lock'] }).checks.fifo.valid).toBe(false);
  });

  it("ends a waiter's place at the store's grant to it (offered), heard of or not", () => {
    // The store granted A first (offered), but A never held it (its answer came after its lease
    // ran out): B's grant after that passes A in nothing. Without the offered event, it does.
    const offered = (proc: string) => ({ proc, type: 'ok' as const, f: 'offered' });
    const lapsed = (seen: boolean) =>
      at([
        ...acquire('h', 1),
        invoke('A'),
        queued('A'),
        invoke('B'),
        ...release('h'),
        ...(seen ? [offered('A')] : []),
        queued('A'), // A queues again, at the back
        granted('B', 3),
        ...release('B'),
        granted('A', 4),
        ...release('A'),
      ]);
    expect(checkLockHistory(lapsed(true), { fair: true }).checks.fifo.valid).toBe(true);
    expect(checkLockHistory(lapsed(false), { fair: true }).checks.fifo.violations).toHaveLength(1);
    // An offer that is the grant it heard of changes nothing; other checks skip the event.
    const report = checkLockHistory(
      at([
        ...acquire('h', 1),
        invoke('A'),
        queued('A'),
        invoke('B'),
        ...release('h'),
        offered('A'),
        granted('A', 2),
        ...release('A'),
        granted('B', 3),
        ...release('B'),
      ]),
      { fair: true },
    );
    expect(report.valid).toBe(true);
  });

  it('orders only what is known: overlapping enqueues, no queued event, a waiter that gave up', () => {
    // A's place is known only after B began: either order is fine.
    const overlapping = at([
      ...acquire('h', 1),
      invoke('A'),
      invoke('B'),
      queued('A'),
      ...release('h'),
      granted('B', 2),
      ...release('B'),
      granted('A', 3),
    ]);
    expect(checkLockHistory(overlapping, { fair: true }).checks.fifo.valid).toBe(true);
    // Nobody said A was queued: A's invocation before B's alone orders nothing.
    const unknown = at([
      ...acquire('h', 1),
      invoke('A'),
      invoke('B'),
      ...release('h'),
      granted('B', 2),
      ...release('B'),
      granted('A', 3),
    ]);
    expect(checkLockHistory(unknown, { fair: true }).checks.fifo.valid).toBe(true);
    // A gave up (timed out): B may go.
    const gaveUp = at([
      ...acquire('h', 1),
      invoke('A'),
      queued('A'),
      invoke('B'),
      { proc: 'A', type: 'fail', f: 'acquire', error: 'LockTimeoutError' },
      ...release('h'),
      granted('B', 2),
    ]);
    expect(checkLockHistory(gaveUp, { fair: true }).checks.fifo.valid).toBe(true);
    // A still waits when the history ends, B was served: A was passed over.
    const stillWaiting = at([
      ...acquire('h', 1),
      invoke('A'),
      queued('A'),
      invoke('B'),
      ...release('h'),
      granted('B', 2),
    ]);
    expect(checkLockHistory(stillWaiting, { fair: true }).checks.fifo.violations).toMatchObject([
      { overtaken: 'A', by: 'B' },
    ]);
  });

  it("a holder's re-entry is not a waiter: it passes the queue", () => {
    const reentry = at([
      ...acquire('h', 1),
      invoke('A'),
      queued('A'),
      ...acquire('h', 1), // h enters again, A still queued
      ...release('h'),
      ...release('h'),
      granted('A', 2),
    ]);
    expect(checkLockHistory(reentry, { fair: true }).checks.fifo.valid).toBe(true);
  });
});

describe('liveness: a freed lock goes to a waiter within the bound (L7)', () => {
  /** Events at the given times. */
  const timed = (events: Array<[number, Omit<HistoryEvent, 't'>]>): HistoryEvent[] =>
    events.map(([t, event]) => ({ ...event, t: String(t) }) as HistoryEvent);
  const handOff = (grantAt: number) =>
    timed([
      [0, { proc: 'a', type: 'invoke', f: 'acquire' }],
      [1, { proc: 'a', type: 'ok', f: 'acquire', owner: 'a', token: 1 }],
      [2, { proc: 'b', type: 'invoke', f: 'acquire' }],
      [10, { proc: 'a', type: 'invoke', f: 'release' }],
      [12, { proc: 'a', type: 'ok', f: 'release' }],
      [grantAt, { proc: 'b', type: 'ok', f: 'acquire', owner: 'b', token: 2 }],
    ]);

  it('unchecked without a bound; a grant within it passes, a late one is reported from the release', () => {
    expect(checkLockHistory(handOff(100)).checks.liveness).toEqual({
      valid: true,
      boundNs: undefined,
      violations: [],
    });
    expect(checkLockHistory(handOff(20), { grantWithinNs: 10 }).checks.liveness.valid).toBe(true);
    const late = checkLockHistory(handOff(100), { grantWithinNs: 10 });
    expect(late.checks.liveness).toEqual({
      valid: false,
      boundNs: '10',
      violations: [{ lock: 'lock', since: '12', waitedNs: '88', endedBy: 'grant', waiters: ['b'] }],
    });
    expect(late.valid).toBe(false);
  });

  it('a lock held all along owes nobody; a waiter that arrives at a free lock is owed from its arrival', () => {
    const held = timed([
      [0, { proc: 'a', type: 'invoke', f: 'acquire' }],
      [1, { proc: 'a', type: 'ok', f: 'acquire', owner: 'a', token: 1 }],
      [2, { proc: 'b', type: 'invoke', f: 'acquire' }],
      [500, { proc: 'b', type: 'fail', f: 'acquire', error: 'LockTimeoutError' }],
    ]);
    expect(checkLockHistory(held, { grantWithinNs: 10 }).checks.liveness.valid).toBe(true);
    const free = timed([
      [0, { proc: 'b', type: 'invoke', f: 'acquire' }],
      [500, { proc: 'b', type: 'fail', f: 'acquire', error: 'LockTimeoutError' }],
    ]);
    expect(checkLockHistory(free, { grantWithinNs: 10 }).checks.liveness.violations).toEqual([
      { lock: 'lock', since: '0', waitedNs: '500', endedBy: 'waiters-gone', waiters: ['b'] },
    ]);
  });

  it("freed by a lease's end (valid_until), a loss, or a kill; the history's end closes the stretch", () => {
    const expired = (grantAt: number) =>
      timed([
        [0, { proc: 'a', type: 'invoke', f: 'acquire' }],
        [1, { proc: 'a', type: 'ok', f: 'acquire', owner: 'a', token: 1, valid_until: '50' }],
        [2, { proc: 'b', type: 'invoke', f: 'acquire' }],
        [grantAt, { proc: 'b', type: 'ok', f: 'acquire', owner: 'b', token: 2 }],
      ]);
    expect(checkLockHistory(expired(70), { grantWithinNs: 30 }).checks.liveness.valid).toBe(true);
    expect(checkLockHistory(expired(90), { grantWithinNs: 30 }).checks.liveness.violations).toEqual([
      { lock: 'lock', since: '50', waitedNs: '40', endedBy: 'grant', waiters: ['b'] },
    ]);
    const lost = timed([
      [0, { proc: 'a', type: 'invoke', f: 'acquire' }],
      [1, { proc: 'a', type: 'ok', f: 'acquire', owner: 'a', token: 1 }],
      [2, { proc: 'b', type: 'invoke', f: 'acquire' }],
      [5, { proc: 'a', type: 'ok', f: 'lost', reason: 'expired' }],
      [60, { proc: 'c', type: 'invoke', f: 'acquire' }], // the history goes on; b is never served
    ]);
    expect(checkLockHistory(lost, { grantWithinNs: 30 }).checks.liveness.violations).toEqual([
      { lock: 'lock', since: '5', waitedNs: '55', endedBy: 'history-end', waiters: ['b', 'c'] },
    ]);
    const kill = (at: number): [number, Omit<HistoryEvent, 't'>] => [
      at,
      { src: 'harness', proc: 'harness', type: 'info', f: 'fault', fault: 'kill', target: 'a' },
    ];
    const killed = (grantAt: number) =>
      timed([
        [0, { proc: 'a', type: 'invoke', f: 'acquire' }],
        [1, { proc: 'a', type: 'ok', f: 'acquire', owner: 'a', token: 1 }],
        [2, { proc: 'b', type: 'invoke', f: 'acquire' }],
        kill(10),
        [grantAt, { proc: 'b', type: 'ok', f: 'acquire', owner: 'b', token: 2 }],
      ]);
    expect(checkLockHistory(killed(30), { grantWithinNs: 30 }).checks.liveness.valid).toBe(true);
    expect(checkLockHistory(killed(50), { grantWithinNs: 30 }).checks.liveness.valid).toBe(false);
  });

  it('permits: a waiter is owed as soon as a permit is free', () => {
    const permits = timed([
      [0, { proc: 'a', type: 'invoke', f: 'acquire', mode: 'p', permits: 2 }],
      [1, { proc: 'a', type: 'ok', f: 'acquire', owner: 'a', token: 1 }],
      [2, { proc: 'b', type: 'invoke', f: 'acquire', mode: 'p', permits: 2 }],
      [90, { proc: 'b', type: 'ok', f: 'acquire', owner: 'b', token: 2 }],
    ]);
    expect(checkLockHistory(permits, { grantWithinNs: 30 }).checks.liveness.violations).toMatchObject([
      { since: '2', waitedNs: '88', endedBy: 'grant' },
    ]);
  });
});
