import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import * as prettier from 'prettier';
import type { TestProject } from 'vitest/node';
import { lockSourcesDigest } from './helpers/lock-sources.js';

/** The table's order: by fault, then backend; rows not listed here follow, by name. */
const ORDER = [
  'holder-killed',
  'holder-paused',
  'holder-partitioned',
  'holder-partitioned-policy-lost',
  'holder-partitioned-no-server-timeout',
  'lease-expired',
  'session-expired',
  'connection-terminated',
  'connection-terminated-xact',
  'server-restarted',
  'leader-lost',
  'leader-lost-policy-lost',
  'leader-lost-holder-cut-off',
  'partition-minority',
  'latency-spike-holder',
  'latency-spike-late-grant',
  'restart-empty',
  'redlock-restart-empty',
  'redlock-restart-fsync-always',
  'redlock-restart-delayed',
  'redlock-1-of-5-killed',
  'redlock-1-of-5-hung',
  'redlock-3-of-5-down',
  'redlock-clock-jump',
  'redlock-clock-jump-3-votes',
  'client-clock-jump',
  'client-clock-jump-semaphore',
  'sentinel-split-brain',
  'cluster-failover',
  'herd-10000',
  'herd-500',
  'herd-100',
];
const BACKENDS = [
  'redis',
  'cluster',
  'sentinel',
  'redlock',
  'etcd',
  'zookeeper',
  'postgres',
  'mysql',
  'local',
];
const rank = (list: string[], value: string) => (list.includes(value) ? list.indexOf(value) : list.length);

/**
 * Global setup of `npm run test:faults` (vitest.faults.config.ts): gives the test files a directory
 * for their rows (test/helpers/fault-report.ts reportRow), and afterwards writes the rows into
 * LOCKSTOCK_FAULTS_REPORT (docs/faults.json) under `locks`, keeping what else the file holds (the
 * sale's rows: the root `npm run test:faults` runs the sale's suite first, which rewrites the file).
 */
export default function setup(project: TestProject): () => Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'lockstock-lock-fault-rows-'));
  project.provide('lockFaultRowsDir', dir);
  return async () => {
    const out = process.env.LOCKSTOCK_FAULTS_REPORT;
    try {
      const rows = readdirSync(dir)
        .filter((file) => file.endsWith('.json'))
        .map((file) => JSON.parse(readFileSync(join(dir, file), 'utf8')) as { row: string; backend: string })
        .sort(
          (a, b) =>
            rank(ORDER, a.row) - rank(ORDER, b.row) ||
            a.row.localeCompare(b.row) ||
            rank(BACKENDS, a.backend) - rank(BACKENDS, b.backend),
        );
      if (!out || rows.length === 0) return;
      const file = resolve(out);
      let report: Record<string, unknown> = {};
      try {
        report = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
      } catch {
        // no report yet: the lock rows start it
      }
      const machine = `${cpus().length} cores, ${process.platform} ${process.arch}, Node ${process.versions.node}`;
      // What they were measured on: test/docs/faults-report.test.ts compares it with the sources.
      report.locks = { ranAt: new Date().toISOString(), machine, sources: lockSourcesDigest(), rows };
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, await prettier.format(JSON.stringify(report), { parser: 'json', printWidth: 110 }));
      process.stdout.write(`lock fault rows: ${rows.length} written to ${file} (locks)\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
}
