import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import * as prettier from 'prettier';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultCluster } from './harness/cluster.js';
import { ROWS, runRow, type RowRun } from './harness/rows.js';

/**
 * The fault suite (`npm run test:faults`; not part of `npm test`, whose quick rows are in
 * quick.test.ts): every row of harness/rows.ts against 2 `serve --workers 0` + 1 `worker` processes
 * on real Redis (AOF) and PostgreSQL. Each row's history is kept as JSON Lines; with
 * LOCKSTOCK_FAULTS_REPORT set, the reports are written there as JSON (scripts/fault-table.mjs turns
 * them into the README's table).
 */
const SECRET = 'fault-suite-secret-0123456789';
const historyDir = join(tmpdir(), `lockstock-faults-${new Date().toISOString().replace(/[:.]/g, '-')}`);
let cluster: FaultCluster;
const runs: RowRun[] = [];

beforeAll(async () => {
  cluster = await FaultCluster.start({ secret: SECRET });
});

afterAll(async () => {
  await cluster?.stop();
  const out = process.env.LOCKSTOCK_FAULTS_REPORT;
  if (out && runs.length > 0) {
    mkdirSync(dirname(out), { recursive: true });
    const machine = `${cpus().length} cores, ${process.platform} ${process.arch}, Node ${process.versions.node}`;
    const json = JSON.stringify({ ranAt: new Date().toISOString(), machine, rows: runs });
    writeFileSync(out, await prettier.format(json, { parser: 'json', printWidth: 110 }));
  }
});

describe('the sale under faults (real processes, real faults)', () => {
  for (const faultRow of ROWS) {
    it(faultRow.name, async () => {
      const run = await runRow(cluster, faultRow, { secret: SECRET, historyDir });
      runs.push(run);
      process.stdout.write(
        `${faultRow.name}: ${JSON.stringify(run.report.stats)}\n  history: ${run.historyFile}\n`,
      );
      expect(run.unexpected, `history: ${run.historyFile}`).toEqual([]);
    });
  }
});
