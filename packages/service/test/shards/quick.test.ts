import { describe, expect, it } from 'vitest';
import { runSplitSale } from './many-processes.js';

// The quick variant of the multi-process proof (npm test); `npm run test:shards` runs the full one:
// 20,000 units and 50,000 buyers.
describe('a split sale across OS processes on a 3-master Cluster (quick)', () => {
  it('1,200 units, 3,000 buyers over 3 serves, one SIGKILLed mid-transfer: exact, none told sold out early', async () => {
    const report = await runSplitSale({
      stock: 1_200,
      users: 3_000,
      perUserLimit: 2,
      repeaterEvery: 5,
      serves: 2,
      workers: 1,
      lanes: 48,
    });
    console.log(`split sale (quick): ${JSON.stringify(report)}`);
    expect(report.accepted).toBe(1_200);
    expect(report.transfers).toBeGreaterThan(0);
  }, 180_000);
});
