import { describe, expect, it } from 'vitest';
import { contradictedVerdicts, verdictsIn } from './verdicts.js';

// The oracle of many-processes.ts on hand-made records: it must clear a true verdict and name a false
// one (the multi-process run can only show that it passes).
describe('sold-out verdicts judged at their Redis time', () => {
  const reserved = (...ms: number[]) => ms.map((reservedAtMs) => ({ quantity: 1, reservedAtMs }));
  const verdict = (fromMs: number, toMs: number, left = 0) => ({
    saleId: 's',
    fromUs: fromMs * 1000 + 300,
    toUs: toMs * 1000 + 700,
    left,
    wanted: 1,
  });

  it('reads the lines a serve printed, and nothing else', () => {
    expect(
      verdictsIn(['{"level":30}', 'verdict:sold_out 42 1700000000000100 1700000000000900 0 1', 'verdict:x']),
    ).toEqual([{ saleId: '42', fromUs: 1700000000000100, toUs: 1700000000000900, left: 0, wanted: 1 }]);
  });

  it('clears a verdict proven after the last unit was reserved, even in the same millisecond', () => {
    expect(contradictedVerdicts([verdict(1000, 1005)], reserved(900, 1000, 1005), 3)).toEqual([]);
  });

  it('names a verdict given while units remained at its Redis time, however late the answer arrived', () => {
    const wrong = contradictedVerdicts([verdict(1000, 1001)], reserved(900, 950, 1002), 3);
    expect(wrong).toHaveLength(1);
    expect(wrong[0]).toMatch(/at least 1 units left then \(sold out falsely\)/);
  });

  it('names a verdict whose count of units left the record contradicts', () => {
    // 5 units, 3 reserved well before: 2 left, though the verdict said 1 (asking for 3).
    const wrong = contradictedVerdicts([{ ...verdict(1000, 1001, 1), wanted: 3 }], reserved(1, 2, 3), 5);
    expect(wrong).toEqual([expect.stringMatching(/had 2\.\.2 units left then/)]);
  });
});
