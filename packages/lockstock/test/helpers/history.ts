/** What a contender recorded about one critical section (times: CLOCK_MONOTONIC ns, machine-wide). */
export interface SectionRecord {
  pid: number;
  owner: string;
  token: number;
  acquiredAt: string;
  releasingAt: string;
  outcome: string;
}

export interface ExclusionReport {
  sections: number;
  /** Pairs of sections from different owners whose [acquired, releasing) intervals intersect. */
  overlaps: number;
  /** Sections whose fencing token is not greater than the previous section's (in acquisition order). */
  tokenRegressions: number;
}

/**
 * Mutual exclusion from what was recorded: a holding interval runs from the acquire's reply to the
 * release's invocation (Maelstrom's rule); no two may intersect, and tokens must grow with them.
 */
export function checkExclusion(records: SectionRecord[]): ExclusionReport {
  const sorted = [...records].sort((a, b) => (BigInt(a.acquiredAt) < BigInt(b.acquiredAt) ? -1 : 1));
  let overlaps = 0;
  let tokenRegressions = 0;
  let latestEnd = -1n;
  for (let i = 0; i < sorted.length; i++) {
    const current = sorted[i]!;
    if (BigInt(current.acquiredAt) < latestEnd) overlaps++;
    const end = BigInt(current.releasingAt);
    if (end > latestEnd) latestEnd = end;
    const previous = sorted[i - 1];
    if (previous && current.token <= previous.token) tokenRegressions++;
  }
  return { sections: sorted.length, overlaps, tokenRegressions };
}
