// The lock library's half of `npm run faults:table` (scripts/fault-table.mjs calls it): from the
// `locks` section of docs/faults.json (written by the lock fault rows, `npm run test:faults -w
// lockstock`), the table between `<!-- lock-fault-table:begin -->` and `<!-- lock-fault-table:end -->`
// in packages/lockstock/docs/safety.md; and from both sections, docs/what-holds.md — what holds under which
// fault, in plain words.
import { readFileSync, writeFileSync } from 'node:fs';
import * as prettier from 'prettier';

const BEGIN = '<!-- lock-fault-table:begin -->';
const END = '<!-- lock-fault-table:end -->';

const BACKENDS = {
  redis: 'Redis (one server)',
  cluster: 'Redis Cluster',
  sentinel: 'Redis with Sentinel',
  redlock: 'Redlock (5 masters)',
  etcd: 'etcd (session lease)',
  zookeeper: 'ZooKeeper (ephemeral sequential nodes)',
  postgres: 'PostgreSQL (advisory locks)',
  mysql: 'MySQL / MariaDB (user locks, GET_LOCK)',
  local: 'Local (in-process)',
};

/** What each expected outcome means (RELIABILITY.md §3.0). */
const OUTCOMES = {
  OK: 'exclusion holds',
  VIOL: 'two believed holders, by design: the checker must find them',
  'F-OK': 'the fenced resource accepts nothing stale',
  UNAV: 'refused (a typed error or a timeout), never a false success',
  LIVE: 'safe, and every waiter gets its turn',
};

/** How a row came out, judged against what it expects (rows are reported only when their test passed). */
function verdict(row) {
  const { overlaps, acceptedStale, refusedNeedlessly } = row.checker;
  if (row.defect) return `**defect**: ${row.defect}`;
  if (acceptedStale > 0 || refusedNeedlessly > 0) return '**fence broken**';
  if (overlaps > 0) {
    if (row.expected.includes('VIOL')) return 'two holders found, as they must be; the fence held';
    // A row that promises only the fence (a race it cannot rule out): the overlap is allowed.
    return row.expected.includes('OK')
      ? '**two holders**'
      : 'two holders found (this row allows it); the fence held';
  }
  return row.expected.includes('UNAV') && !row.expected.includes('OK') ? 'refused, nobody held it' : 'holds';
}

const count = (n) => (n > 0 ? `**${n}**` : '0');

function lockTable(locks) {
  const header = [
    'fault',
    'backend',
    'expected',
    'two holders (checker)',
    'token re-issued or back',
    'stale writes accepted / refused',
    'verdict',
  ];
  const lines = locks.rows.map((row) =>
    [
      `\`${row.row}\``,
      row.backend,
      row.expected.join(' + '),
      count(row.checker.overlaps),
      count(row.checker.tokenRegressions),
      `${row.checker.acceptedStale > 0 ? `**${row.checker.acceptedStale}**` : '0'} / ${row.checker.rejectedStale}`,
      verdict(row),
    ].join(' | '),
  );
  return [
    `\`npm run test:faults -w lockstock\`, ${locks.ranAt.slice(0, 10)} (${locks.machine}):`,
    '',
    `| ${header.join(' | ')} |`,
    `| ${header.map((_, i) => (i >= 3 && i <= 5 ? '--:' : '---')).join(' | ')} |`,
    ...lines.map((line) => `| ${line} |`),
    '',
    `Expected: ${Object.entries(OUTCOMES)
      .map(([code, meaning]) => `${code} — ${meaning}`)
      .join('; ')}.`,
    '',
    ...locks.rows.map(
      (row) => `- \`${row.row}\` (${row.backend}, \`${row.file}\`): ${row.fault}. Observed: ${row.observed}.`,
    ),
  ].join('\n');
}

/** What holds for one lock row, in plain words. */
function lockWords(row) {
  const { overlaps, tokenRegressions, rejectedStale } = row.checker;
  const refused = rejectedStale === 1 ? 'one stale write' : `${rejectedStale} stale writes`;
  if (row.defect) {
    return `**Known defect** (${row.defect}): ${overlaps > 0 ? 'two clients believed they held the lock at once; ' : ''}the fenced resource accepted nothing stale${rejectedStale > 0 ? ` and refused ${refused}` : ''}.`;
  }
  if (overlaps > 0) {
    return (
      'Exclusion does **not** hold: two clients believed they held the lock at once — a lock that ends ' +
      `with a lease or a session behind its holder's back cannot prevent it here, and the checker found it${tokenRegressions > 0 ? ', and the fencing token issued again or going back' : ''}. ` +
      `What holds is the fence: the resource accepted no stale write${rejectedStale > 0 ? ` (it refused ${refused})` : ''}.`
    );
  }
  if (row.expected.includes('UNAV') && !row.expected.includes('OK')) {
    return 'No lock is granted while the fault lasts — acquires fail quickly with a typed error — and nobody else holds it.';
  }
  if (!row.expected.includes('OK')) {
    return `No two clients believed they held the lock at once this time, but exclusion is not promised here (a race); what holds is the fence${rejectedStale > 0 ? `: it refused ${refused}` : ''}.`;
  }
  return `Exclusion holds: no two clients believed they held the lock at once${rejectedStale > 0 ? `; the fenced resource also refused ${refused} from the client that lost it` : ''}.`;
}

/** The sale checker's checks in words (as the README's sale table names them). */
const SALE_CHECKS = {
  lostAcknowledged: 'acknowledged orders lost',
  acknowledgedThenRejected: 'acknowledged orders rejected later',
  toldTwice: 'an Idempotency-Key answered twice differently',
  oversold: 'units oversold',
  overLimit: 'users over the limit',
  overOffered: 'units offered beyond the stock',
  unsold: 'units neither sold nor offered',
  refusedButRecorded: 'orders recorded for buyers told no',
  internalErrors: '500s',
  crashes: 'crashes',
  recovery: 'slow recovery',
};

/** What holds for one sale row, in plain words (its checks, from scripts/fault-table.mjs's report). */
function saleWords(run) {
  const failed = run.report.checks.filter((check) => !check.valid);
  if (failed.length === 0) {
    return 'Everything holds: no acknowledged order lost, nothing oversold or over the limit, nothing sold twice, the record complete.';
  }
  const found = failed.map((check) => `${SALE_CHECKS[check.name] ?? check.name} (${check.count})`).join(', ');
  return run.unexpected.length === 0
    ? `As expected for this fault, the checker found: ${found}.`
    : `**Not as expected**: the checker found ${found}.`;
}

function whatHolds(report) {
  const parts = [
    '# What holds under which fault',
    '',
    '<!-- Generated by `npm run faults:table` from docs/faults.json (`npm run test:faults`): do not edit. -->',
    '',
    'Each fault below was made for real — processes killed or paused, servers restarted, links cut or slowed ' +
      'by a TCP fault proxy, a server clock moved — and what happened was recorded and checked afterwards. ' +
      'A lease or session lock cannot keep two clients from believing they hold it when a holder pauses, is cut off, ' +
      'loses its session, or a server forgets; where that happens, the test requires the checker to find it, and the safety ' +
      'lockstock promises is at the resource: a fenced store refuses every write from a holder that was ' +
      'overtaken.',
  ];
  if (report.locks) {
    parts.push('', `## The locks`, '', `Run ${report.locks.ranAt.slice(0, 10)} (${report.locks.machine}).`);
    const backends = [...new Set(report.locks.rows.map((row) => row.backend))];
    for (const backend of Object.keys(BACKENDS).filter((b) => backends.includes(b))) {
      parts.push('', `### ${BACKENDS[backend]}`, '');
      for (const row of report.locks.rows.filter((r) => r.backend === backend)) {
        parts.push(`- **${row.fault}.** ${lockWords(row)} Seen: ${row.observed}.`);
      }
    }
  }
  if (report.rows) {
    parts.push('', '## The flash sale', '', `Run ${report.ranAt.slice(0, 10)} (${report.machine}).`, '');
    for (const run of report.rows) parts.push(`- **${run.fault}.** ${saleWords(run)}`);
  }
  return `${parts.join('\n')}\n`;
}

async function format(file, text) {
  const options = { ...(await prettier.resolveConfig(file)), filepath: file };
  writeFileSync(file, await prettier.format(text, options));
}

/** Writes the lock table into the library's docs/safety.md and docs/what-holds.md; says what it wrote. */
export async function writeLockFaultTables(report, root) {
  const written = [];
  if (report.locks) {
    const readmeFile = `${root}packages/lockstock/docs/safety.md`;
    const readme = readFileSync(readmeFile, 'utf8');
    const start = readme.indexOf(BEGIN);
    const end = readme.indexOf(END);
    if (start < 0 || end < start) throw new Error(`${readmeFile} has no ${BEGIN} ... ${END} section`);
    await format(
      readmeFile,
      `${readme.slice(0, start + BEGIN.length)}\n\n${lockTable(report.locks)}\n\n${readme.slice(end)}`,
    );
    written.push(`packages/lockstock/docs/safety.md (${report.locks.rows.length} lock rows)`);
  }
  await format(`${root}docs/what-holds.md`, whatHolds(report));
  written.push('docs/what-holds.md');
  return written;
}
