import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import * as prettier from 'prettier';
import { afterAll, describe, expect, it } from 'vitest';
import { FaultCluster } from './harness/cluster.js';
import { ROWS, runRow, type RowRun } from './harness/rows.js';

/**
 * The fault suite (`npm run test:faults`; not part of `npm test`, whose quick rows are in
 * quick.test.ts): every row of harness/rows.ts against real processes on real Redis (AOF) and
 * PostgreSQL — by default 2 `serve --workers 0` + 1 `worker`, shared by the rows; a row that names a
 * cluster of its own (e.g. several serves with their own pipelines, under a heavy load) gets one. A
 * row passes only if the checker reports what it must and nothing it may not (a row that must fail
 * fails the suite when the checker finds nothing). Each row's history is kept as JSON Lines; with
 * LOCKSTOCK_FAULTS_REPORT set, the reports are written there as JSON (scripts/fault-table.mjs turns
 * them into docs/failures.md's table).
 */
const SECRET = 'fault-suite-secret-0123456789';
const historyDir = join(tmpdir(), `lockstock-faults-${new Date().toISOString().replace(/[:.]/g, '-')}`);
let shared: FaultCluster | undefined;
const runs: RowRun[] = [];

afterAll(async () => {
  await shared?.stop();
  const out = process.env.LOCKSTOCK_FAULTS_REPORT;
  if (out && runs.length > 0) {
    mkdirSync(dirname(out), { recursive: true });
    // The sale's rows at the top level; what else the file holds (the lock rows' `locks`) is kept.
    let kept: Record<string, unknown> = {};
    try {
      kept = JSON.parse(readFileSync(out, 'utf8')) as Record<string, unknown>;
    } catch {
      // no report yet
    }
    const machine = `${cpus().length} cores, ${process.platform} ${process.arch}, Node ${process.versions.node}`;
    const json = JSON.stringify({ ...kept, ranAt: new Date().toISOString(), machine, rows: runs });
    writeFileSync(out, await prettier.format(json, { parser: 'json', printWidth: 110 }));
  }
});

describe('the sale under faults (real processes, real faults)', () => {
  for (const faultRow of ROWS) {
    it(faultRow.name, { timeout: faultRow.cluster ? 600_000 : 180_000 }, async () => {
      // A row with a cluster of its own starts it (and stops it after); the others share one.
      const own = faultRow.cluster
        ? await FaultCluster.start({ secret: SECRET, ...faultRow.cluster })
        : undefined;
      try {
        const cluster = own ?? (shared ??= await FaultCluster.start({ secret: SECRET }));
        const run = await runRow(cluster, faultRow, { secret: SECRET, historyDir, ...faultRow.load });
        runs.push(run);
        process.stdout.write(
          `${faultRow.name}: ${JSON.stringify(run.report.stats)}\n  notes: ${JSON.stringify(run.notes)}\n  history: ${run.historyFile}\n`,
        );
        expect(run.unexpected, `history: ${run.historyFile}`).toEqual([]);
      } finally {
        await own?.stop();
      }
    });
  }
});
