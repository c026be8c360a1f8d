/** What a contender recorded about one critical section (times: CLOCK_MONOTONIC ns, machine-wide). */
export interface SectionRecord {
  pid: number;
  /** 'exclusive': must be alone; 'shared': may overlap other shared sections up to the bound. */
  mode: 'exclusive' | 'shared';
  owner: string;
  token: number;
  acquiredAt: string;
  releasingAt: string;
  /** How many sections were inside (this one included) by the probe counter on the server. */
  inside: number;
  outcome: string;
}

export interface BoundReport {
  sections: number;
  /** Exclusive sections whose [acquired, releasing) interval intersects another section's. */
  overlaps: number;
  /** Most sections inside at once, from the recorded intervals. */
  maxConcurrent: number;
  /** Most sections inside at once, as the probe counter on the server saw it. */
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
