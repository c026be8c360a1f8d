import { describe, expect, it } from 'vitest';
import { runSplitSale } from './many-processes.js';

// `npm run test:shards`: issue 26's full proof, on demand (the quick variant runs in npm test).
describe('a split sale across OS processes on a 3-master Cluster', () => {
  it('20,000 units, 50,000 buyers over 4 serves, one SIGKILLed mid-transfer: 0 oversold, 0 over the limit, 0 unsold, none told sold out early', async () => {
    const report = await runSplitSale({
      stock: 20_000,
      users: 50_000,
      perUserLimit: 2,
      repeaterEvery: 5,
      serves: 3,
      workers: 2,
      lanes: 128,
    });
    console.log(`split sale: ${JSON.stringify(report)}`);
    expect(report.accepted).toBe(20_000);
    expect(report.transfers).toBeGreaterThan(0);
  }, 600_000);
});
