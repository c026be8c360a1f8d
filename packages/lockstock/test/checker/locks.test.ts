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
  });
});
