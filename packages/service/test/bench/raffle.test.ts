import { describe, expect, it } from 'vitest';
import { benchRaffle, raffleBenchTable } from '../../src/bench/sale/raffle.js';

// `bench sale --raffle` at a small size (the README's figures are from 1,000,000 entries): its rows
// are there, and the draw it times orders every bulk-loaded entry (benchRaffle checks it).
describe('bench sale --raffle', () => {
  it('measures entries/s, entries recorded/s and the draw of the recorded entries', async () => {
    const report = await benchRaffle({ runs: 1, entries: 2_000, drawEntries: 20_000, stock: 100 });
    expect(report.entriesPerSec).toBeGreaterThan(0);
    expect(report.recordedPerSec).toBeGreaterThan(0);
    expect(report.drawMs).toBeGreaterThan(0);
    const table = raffleBenchTable(report);
    expect(table.rows.map((row) => row[0])).toEqual([
      'entries/s (enter.lua, 256 in flight, 2,000 entries)',
      'entries recorded/s (stream → raffle_entries)',
      'draw of 20,000 recorded entries (one transaction)',
      'serving its 100 winners (promote.lua → orders stream)',
    ]);
  }, 120_000);
});
