// Writes the sale's "what holds under which fault" table from the fault suite's report:
// `npm run test:faults` writes docs/faults.json, `npm run faults:table` turns it into the table between
// the `<!-- fault-table:begin -->` and `<!-- fault-table:end -->` markers of docs/failures.md. The lock
// library's rows (the report's `locks`) go to packages/lockstock/docs/safety.md, and both to
// docs/what-holds.md (scripts/lock-fault-table.mjs).
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import { writeLockFaultTables } from './lock-fault-table.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const reportFile = process.argv[2] ?? `${root}docs/faults.json`;
const readmeFile = `${root}docs/failures.md`;
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
  ['overOffered', 'over-offered'],
  ['unsold', 'unsold'],
  ['refusedButRecorded', 'told no, recorded'],
  ['internalErrors', '500s'],
  ['crashes', 'crashes'],
];

const cell = (check) =>
  check === undefined ? 'n/a' : check.valid ? '0' : `**${check.count.toLocaleString('en-US')}**`;
const title = Object.fromEntries(COLUMNS);
const names = (checks) => checks.map((name) => title[name] ?? name).join(', ');

/** What the row must show (a row that must fail proves the checker catches its fault). */
function expected(run) {
  const { mustFail = [], mayFail = [] } = run.expected ?? {};
  if (mustFail.length > 0) return `violation found (${names(mustFail)})`;
  return mayFail.length > 0 ? `holds (may show ${names(mayFail)})` : 'holds';
}

/** What it showed, judged against that. */
function observed(run) {
  const failed = run.report.checks.filter((c) => !c.valid).map((c) => c.name);
  if (run.unexpected.length > 0) {
    const missing = (run.expected?.mustFail ?? []).filter((name) => !failed.includes(name));
    return [
      ...(failed.length > 0 ? [`**violation found** (${names(failed)})`] : []),
      ...(missing.length > 0 ? [`**not found**: ${names(missing)}`] : []),
    ].join('; ');
  }
  if (failed.length === 0) return 'holds';
  return (run.expected?.mustFail ?? []).length > 0
    ? `violation found (${names(failed)}), as it must`
    : `violation found (${names(failed)}), as it may`;
}

const rows = report.rows.map((run) => {
  const checks = Object.fromEntries(run.report.checks.map((c) => [c.name, c]));
  const { stats } = run.report;
  const recovery = checks.recovery.valid
    ? `${stats.recoveryMs} ms`
    : `**${stats.recoveryMs === null ? 'never' : `${stats.recoveryMs} ms`}**`;
  return [
    `\`${run.row}\``,
    stats.requests.toLocaleString('en-US'),
    `${stats.acknowledged.toLocaleString('en-US')} (${stats.acknowledgedDuringFault.toLocaleString('en-US')})`,
    `${stats.unknown.toLocaleString('en-US')} (${stats.unavailable.toLocaleString('en-US')})`,
    ...COLUMNS.map(([name]) => cell(checks[name])),
    checks.drained.valid && checks.recordConsistent.valid ? 'yes' : '**no**',
    recovery,
    expected(run),
    observed(run),
  ];
});

/** A row's notes for the list under the table: its load, and what its fault's steps observed. */
function notes(run) {
  const parts = [];
  if (run.load) {
    const count = (prefix) => run.load.processes.filter((p) => p.startsWith(prefix)).length;
    const workers = count('worker');
    parts.push(
      `${run.load.stock.toLocaleString('en-US')} units, ${run.load.ratePerSecond} new buyers/s, ` +
        `${count('serve')} serve${workers > 0 ? ` and ${workers} worker` : ''} processes`,
    );
  }
  const backlog = run.notes?.backlog;
  if (backlog) {
    parts.push(
      `the ${backlog.pipelines} pipeline(s) held ${backlog.pending.toLocaleString('en-US')} unrecorded orders when Redis was killed ` +
        `(${Object.values(backlog.perConsumer).join(' + ')}), ${backlog.undelivered} more were not delivered yet`,
    );
  }
  const rebuild = run.notes?.rebuild;
  if (rebuild) {
    parts.push(
      `their writes went on ${rebuild.writesHeldMs} ms after Redis was back, ` +
        (rebuild.finishedBeforeWritesWentOn
          ? 'after the rebuild had finished'
          : `while the rebuild waited for them${rebuild.fenceRaised ? ' (recovery fence raised)' : ''}`),
    );
  }
  const offers = run.report.stats.offers;
  if (offers) parts.push(`offer sampled ${offers.samples} times (${offers.judged} judged)`);
  return parts.length > 0 ? ` (${parts.join('; ')})` : '';
}

const header = [
  'fault',
  'requests',
  '202s (during it)',
  'unknown outcomes (503s)',
  ...COLUMNS.map(([, name]) => name),
  'record complete',
  'selling again after',
  'expected',
  'observed',
];
const table = [
  `\`npm run test:faults\`, ${report.ranAt.slice(0, 10)} (${report.machine}):`,
  '',
  `| ${header.join(' | ')} |`,
  `| ${header.map((_, i) => (i === 0 || i >= header.length - 2 ? '---' : '--:')).join(' | ')} |`,
  ...rows.map((r) => `| ${r.join(' | ')} |`),
  '',
  ...report.rows.map((run) => `- \`${run.row}\`: ${run.fault}${notes(run)}.`),
].join('\n');

const readme = readFileSync(readmeFile, 'utf8');
const start = readme.indexOf(BEGIN);
const end = readme.indexOf(END);
if (start < 0 || end < start) throw new Error(`docs/failures.md has no ${BEGIN} ... ${END} section`);
const updated = `${readme.slice(0, start + BEGIN.length)}\n\n${table}\n\n${readme.slice(end)}`;
const options = { ...(await prettier.resolveConfig(readmeFile)), filepath: readmeFile };
writeFileSync(readmeFile, await prettier.format(updated, options));
process.stdout.write(`docs/failures.md: fault table from ${reportFile} (${rows.length} rows)\n`);
for (const file of await writeLockFaultTables(report, root))
  process.stdout.write(`${file}: from ${reportFile}\n`);
