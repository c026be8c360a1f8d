// Writes the README's "what holds under which fault" table from the fault suite's report:
// `npm run test:faults` writes docs/faults.json, `npm run faults:table` turns it into the table between
// the `<!-- fault-table:begin -->` and `<!-- fault-table:end -->` markers of README.md.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';

const root = fileURLToPath(new URL('..', import.meta.url));
const reportFile = process.argv[2] ?? `${root}docs/faults.json`;
const readmeFile = `${root}README.md`;
const BEGIN = '<!-- fault-table:begin -->';
const END = '<!-- fault-table:end -->';

const report = JSON.parse(readFileSync(reportFile, 'utf8'));

/** The columns: a check of the checker each, shown as its count of violations. */
const COLUMNS = [
  ['lostAcknowledged', 'lost 202s'],
  ['acknowledgedThenRejected', '202 then rejected'],
  ['toldTwice', 'told 202 twice'],
  ['oversold', 'oversold'],
  ['overLimit', 'over limit'],
  ['unsold', 'unsold'],
  ['refusedButRecorded', 'told no, recorded'],
  ['internalErrors', '500s'],
  ['crashes', 'crashes'],
];

const cell = (check) => (check.valid ? '0' : `**${check.count}**`);
const title = Object.fromEntries(COLUMNS);

const rows = report.rows.map((run) => {
  const checks = Object.fromEntries(run.report.checks.map((c) => [c.name, c]));
  const { stats } = run.report;
  const failed = run.report.checks.filter((c) => !c.valid).map((c) => title[c.name] ?? c.name);
  const verdict =
    failed.length === 0
      ? 'holds'
      : run.unexpected.length === 0
        ? `fails as expected (${failed.join(', ')})`
        : `**fails** (${failed.join(', ')})`;
  const recovery = checks.recovery.valid
    ? `${stats.recoveryMs} ms`
    : `**${stats.recoveryMs === null ? 'never' : `${stats.recoveryMs} ms`}**`;
  return [
    `\`${run.row}\``,
    `${stats.acknowledged} (${stats.acknowledgedDuringFault})`,
    `${stats.unknown} (${stats.unavailable})`,
    ...COLUMNS.map(([name]) => cell(checks[name])),
    checks.drained.valid && checks.recordConsistent.valid ? 'yes' : '**no**',
    recovery,
    verdict,
  ];
});

const header = [
  'fault',
  '202s (during it)',
  'unknown outcomes (503s)',
  ...COLUMNS.map(([, name]) => name),
  'record complete',
  'selling again after',
  'verdict',
];
const table = [
  `\`npm run test:faults\`, ${report.ranAt.slice(0, 10)} (${report.machine}):`,
  '',
  `| ${header.join(' | ')} |`,
  `| ${header.map((_, i) => (i === 0 || i === header.length - 1 ? '---' : '--:')).join(' | ')} |`,
  ...rows.map((r) => `| ${r.join(' | ')} |`),
  '',
  ...report.rows.map((run) => `- \`${run.row}\`: ${run.fault}.`),
].join('\n');

const readme = readFileSync(readmeFile, 'utf8');
const start = readme.indexOf(BEGIN);
const end = readme.indexOf(END);
if (start < 0 || end < start) throw new Error(`README.md has no ${BEGIN} ... ${END} section`);
const updated = `${readme.slice(0, start + BEGIN.length)}\n\n${table}\n\n${readme.slice(end)}`;
const options = { ...(await prettier.resolveConfig(readmeFile)), filepath: readmeFile };
writeFileSync(readmeFile, await prettier.format(updated, options));
process.stdout.write(`README.md: fault table from ${reportFile} (${rows.length} rows)\n`);
