import type { HistoryEvent } from '../checker/index.js';

/** What a contender recorded about one critical section (times: CLOCK_MONOTONIC ns, machine-wide). */
export interface SectionRecord {
  pid: number;
  /** 'exclusive': must be alone; 'shared': may overlap other shared sections up to the bound. */
  mode: 'exclusive' | 'shared';
  owner: string;
  token: number;
  /** The async loop of the process that ran it (a process runs several: each is a Jepsen process). */
  loop: number;
  /** acquire called, acquire returned, release called, release returned. */
  invokedAt: string;
  acquiredAt: string;
  releasingAt: string;
  releasedAt: string;
  /** How many sections were inside (this one included), from the order of the probe log. */
  inside: number;
  outcome: string;
}

export interface BoundReport {
  sections: number;
  /** Exclusive sections whose [acquired, releasing) interval intersects another section's. */
  overlaps: number;
  /** Most sections inside at once, from the recorded intervals. */
  maxConcurrent: number;
  /** Most sections inside at once, from the order of the probe log. */
  maxInside: number;
  /** Exclusive sections whose token is not greater than the previous exclusive section's. */
  tokenRegressions: number;
}

const begin = (r: SectionRecord) => BigInt(r.acquiredAt);
const end = (r: SectionRecord) => BigInt(r.releasingAt);

/**
 * Mutual exclusion and bounds from what was recorded: a holding interval runs from the acquire's
 * reply to the release's invocation (Maelstrom's rule). Exclusive sections intersect nothing; all
 * sections together never exceed the bound; exclusive sections' tokens grow in acquisition order.
 */
export function checkHistory(records: SectionRecord[]): BoundReport {
  const sorted = [...records].sort((a, b) => (begin(a) < begin(b) ? -1 : begin(a) > begin(b) ? 1 : 0));
  let overlaps = 0;
  let maxConcurrent = 0;
  let tokenRegressions = 0;
  let lastExclusiveToken = -Infinity;
  const open: SectionRecord[] = [];
  for (const current of sorted) {
    for (let i = open.length - 1; i >= 0; i--) if (end(open[i]!) <= begin(current)) open.splice(i, 1);
    if (open.length > 0 && (current.mode === 'exclusive' || open.some((r) => r.mode === 'exclusive')))
      overlaps++;
    open.push(current);
    maxConcurrent = Math.max(maxConcurrent, open.length);
    if (current.mode === 'exclusive') {
      if (current.token <= lastExclusiveToken) tokenRegressions++;
      lastExclusiveToken = current.token;
    }
  }
  const maxInside = Math.max(0, ...records.map((r) => r.inside));
  return { sections: records.length, overlaps, maxConcurrent, maxInside, tokenRegressions };
}

/**
 * The sections as a history for `lockstock/checker`: per loop (a process of the history), an acquire
 * from its call to its return with the fencing token, then a release from its call to its return.
 */
export function sectionEvents(records: readonly SectionRecord[]): HistoryEvent[] {
  const events: HistoryEvent[] = [];
  for (const r of records) {
    const proc = `${r.pid}:${r.loop}`;
    events.push(
      { proc, type: 'invoke', f: 'acquire', t: r.invokedAt },
      { proc, type: 'ok', f: 'acquire', t: r.acquiredAt, owner: r.owner, token: r.token },
      { proc, type: 'invoke', f: 'release', t: r.releasingAt },
      {
        proc,
        type: r.outcome === 'released' || r.outcome === 'none' ? 'ok' : 'fail',
        f: 'release',
        t: r.releasedAt,
      },
    );
  }
  return events.sort((a, b) => (BigInt(a.t as string) < BigInt(b.t as string) ? -1 : 1));
}
