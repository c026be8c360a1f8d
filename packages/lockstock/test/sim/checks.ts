import type { HistoryEvent, LockCheckReport } from '../../src/checker/index.js';

/**
 * The simulation's oracle, check by check. Each failure is a Finding: the check's name and one
 * sentence — what was violated, by whom, when — followed by the excerpt of the history that shows it.
 * Mutations name the check that must report them (mutations.ts), so a bug caught "somehow" (a crash,
 * a hang) does not count as caught.
 */
export const SIM_CHECKS = [
  /** Checker L1/L5: believed holds never overlap beyond what the mode allows (permits, readers). */
  'exclusion',
  /** Checker L3: an acquire that began after another's grant got a greater token. */
  'tokens',
  /** Checker L2: a release took effect only for the owner that held the lock. */
  'ownership',
  /** Checker L6 (fair locks): grants follow the order waiters were queued in. */
  'fifo',
  /** Checker L7, quiet phase: a free lock with a waiter is granted within the bound. */
  'liveness',
  /** Quiet phase: every acquire (10 s to wait, no faults) gets the lock — no deadlock, no lost waiter. */
  'progress',
  /** After every process ended and every lease ran out, the store holds nothing. */
  'leak',
  /** Latch: no wait returns true before the count reached zero; at zero, every quiet wait returns. */
  'latch',
  /** Multi-lock: an acquire that did not return every part had given back each part it took. */
  'all-or-nothing',
  /** A process threw: the harness or the core broke down (not a rule seen broken). */
  'crash',
  /** A phase did not finish (a hang, or a schedule that ran away). */
  'hang',
] as const;
export type SimCheck = (typeof SIM_CHECKS)[number];

/** Breakdowns, not findings: a mutation "caught" by one of these was not caught. */
export const BREAKDOWNS: ReadonlySet<SimCheck> = new Set<SimCheck>(['crash', 'hang']);

export interface Finding {
  readonly check: SimCheck;
  /** One sentence, then the history excerpt (lines indented). */
  readonly sentence: string;
}

const ms = (ns: bigint | string | number): string => (Number(BigInt(ns)) / 1e6).toFixed(1);

/** The process an owner id belongs to (`p0.1.3` → `p0.1`; a multi-lock part's proc keeps its suffix). */
const procOf = (owner: string): string => {
  const dot = owner.lastIndexOf('.');
  return dot > 0 ? owner.slice(0, dot) : owner;
};

/**
 * The events of the named owners (or their processes) between `from` and `to` ns, at most `limit`,
 * one line each: `  412.3 ms  p0.1 ok acquire sim-lock owner=p0.1.3 token=7`.
 */
export function excerpt(
  history: readonly HistoryEvent[],
  owners: readonly string[],
  from: bigint,
  to: bigint,
  limit = 10,
): string {
  const procs = new Set(owners.map(procOf));
  const about = (e: HistoryEvent) =>
    (typeof e.owner === 'string' && owners.includes(e.owner)) ||
    procs.has(e.proc) ||
    procs.has(procOf(e.proc)) ||
    [...procs].some((p) => e.proc.startsWith(`${p}/`));
  const lines = history
    .filter((e) => about(e) && BigInt(e.t ?? 0) >= from && BigInt(e.t ?? 0) <= to)
    .slice(-limit)
    .map((e) => {
      const extra = ['lock', 'owner', 'token', 'outcome', 'left']
        .filter((k) => e[k] !== undefined)
        .map((k) => (k === 'lock' ? String(e[k]) : `${k}=${String(e[k])}`));
      return `    ${ms(e.t ?? 0).padStart(8)} ms  ${e.proc} ${e.type} ${e.f} ${extra.join(' ')}`;
    });
  return lines.length > 0 ? `\n${lines.join('\n')}` : '';
}

const around = (at: bigint | string, beforeMs: number, afterMs: number): [bigint, bigint] => [
  BigInt(at) - BigInt(Math.round(beforeMs * 1e6)),
  BigInt(at) + BigInt(Math.round(afterMs * 1e6)),
];

/** The checker's verdicts as findings (safety on the whole history, liveness on the quiet phase). */
export function checkerFindings(
  history: readonly HistoryEvent[],
  safety: LockCheckReport,
  liveness: LockCheckReport,
): Finding[] {
  const out: Finding[] = [];
  const { exclusion, tokens, ownership, fifo } = safety.checks;
  for (const v of exclusion.violations.slice(0, 2)) {
    const [from, to] = around(v.at, 600, Number(BigInt(v.overlapNs)) / 1e6 + 50);
    out.push({
      check: 'exclusion',
      sentence:
        `exclusion: ${v.owners.join(' and ')} held ${v.lock} at once, from ${ms(v.at)} ms for ` +
        `${ms(v.overlapNs)} ms${excerpt(history, v.owners, from, to)}`,
    });
  }
  for (const v of tokens.violations.slice(0, 2)) {
    const owners = [v.earlier, v.later].map((s) => s.slice(0, s.lastIndexOf('@')));
    out.push({
      check: 'tokens',
      sentence:
        `tokens: ${v.later} was granted ${v.lock} after ${v.earlier}'s acquire completed, ` +
        `with a token no greater${excerpt(history, owners, 0n, 2n ** 62n, 8)}`,
    });
  }
  for (const v of ownership.violations.slice(0, 2)) {
    const [from, to] = around(v.at, 800, 100);
    out.push({
      check: 'ownership',
      sentence:
        `ownership: ${v.proc}'s release of ${v.lock} as ${v.owner} at ${ms(v.at)} ms took effect while ` +
        `${v.holders.length > 0 ? v.holders.join(', ') : 'nobody'} held it` +
        excerpt(history, [v.owner, ...v.holders], from, to),
    });
  }
  if (fifo.checked) {
    for (const v of fifo.violations.slice(0, 2)) {
      const [from, to] = around(v.queuedAt, 100, Number(BigInt(v.grantedAt) - BigInt(v.queuedAt)) / 1e6 + 50);
      out.push({
        check: 'fifo',
        sentence:
          `fifo: ${v.by} (acquire begun at ${ms(v.invokedAt)} ms) was granted ${v.lock} at ` +
          `${ms(v.grantedAt)} ms ahead of ${v.overtaken}, queued since ${ms(v.queuedAt)} ms` +
          excerpt(history, [v.by, v.overtaken], from, to),
      });
    }
  }
  for (const v of liveness.checks.liveness.violations.slice(0, 2)) {
    const [from, to] = around(v.since, 100, Number(BigInt(v.waitedNs)) / 1e6 + 50);
    out.push({
      check: 'liveness',
      sentence:
        `liveness: ${v.lock} was free for ${v.waiters.join(', ')} from ${ms(v.since)} ms and nobody was ` +
        `granted it for ${ms(v.waitedNs)} ms (ended by ${v.endedBy})` +
        excerpt(history, v.waiters, from, to),
    });
  }
  return out;
}
