import { describe, expect, it } from 'vitest';
import { checkLinearizable, checkLockHistory, mutexModel, operationsOf } from '../../src/checker/index.js';
import { checkHistory, type SectionRecord } from '../../src/testing/history.js';
import { runProbe } from '../../src/testing/probe.js';
import { NO_LOCK } from '../../src/testing/sections.js';
import { CONNECT_MODULE } from './backends.js';

/** A recorded section; times in ns as the contenders record them. */
function section(
  pid: number,
  acquiredAt: number,
  releasingAt: number,
  token: number,
  mode: SectionRecord['mode'] = 'exclusive',
): SectionRecord {
  return {
    pid,
    mode,
    owner: `owner-${pid}-${token}`,
    token,
    loop: 0,
    invokedAt: String(acquiredAt),
    acquiredAt: String(acquiredAt),
    releasingAt: String(releasingAt),
    releasedAt: String(releasingAt),
    inside: 1,
    outcome: 'released',
  };
}

describe("the contract's exclusion probe catches a broken lock", () => {
  it('without a lock, the same probe across 4 processes reports overlaps and lost updates', async () => {
    // lockstock/testing's contender processes with the negative control: sections that take no lock.
    const { report, counter, exclusive, events } = await runProbe(
      { processes: 4, module: CONNECT_MODULE.href, config: {} },
      { subject: NO_LOCK, name: 'probe-control', loops: 2, sections: 15 },
    );
    expect(report.sections).toBe(120);
    expect(report.overlaps).toBeGreaterThan(0);
    expect(report.maxInside).toBeGreaterThan(1);
    expect(counter).toBeLessThan(exclusive); // the read-yield-write increments lost some updates
    // The checker sees it too: no order of these acquires and releases is a mutex's.
    expect(checkLinearizable(operationsOf(events), mutexModel()).valid).toBe(false);
    expect(checkLockHistory(events).checks.exclusion.valid).toBe(false);
  });

  it('the history check flags overlap, a token that goes back, and shared sections past a bound', () => {
    const good = [section(1, 0, 10, 1), section(2, 10, 20, 2), section(1, 25, 30, 3)];
    expect(checkHistory(good)).toMatchObject({ overlaps: 0, tokenRegressions: 0, maxConcurrent: 1 });
    // A second holder inside the first one's interval (a lease that ended under a paused holder).
    const overlapping = [section(1, 0, 10, 1), section(2, 5, 15, 2)];
    expect(checkHistory(overlapping)).toMatchObject({ overlaps: 1, maxConcurrent: 2 });
    // Tokens must grow in acquisition order (a counter that went back after a failover).
    const regressed = [section(1, 0, 10, 5), section(2, 10, 20, 4)];
    expect(checkHistory(regressed)).toMatchObject({ overlaps: 0, tokenRegressions: 1 });
    // Three shared sections at once: within the check, its maxConcurrent says 3 (a 2-permit bound fails).
    const shared = [0, 1, 2].map((i) => section(i, i, 10, i + 1, 'shared'));
    expect(checkHistory(shared)).toMatchObject({ overlaps: 0, maxConcurrent: 3 });
    // A writer among readers overlaps.
    expect(checkHistory([...shared, section(9, 5, 6, 9)]).overlaps).toBeGreaterThan(0);
  });
});
