/**
 * `items` in the order run `run` (0-based) measures them: as listed on even runs, reversed on odd
 * ones. Each path compares lockstock with its baseline measured moments apart in the same run; taking
 * turns at going first spreads what the order itself costs (a machine warming up or throttling, a
 * database filling, the page cache) over both sides, as `bench locks` rotates its libraries. For two
 * subjects rotating and reversing are the same; for the HTTP path's four servers, each of whose rows
 * compares two of them, reversing flips every pair from run to run (rotating four would not).
 */
export function inRunOrder<T>(items: readonly T[], run: number): T[] {
  return run % 2 === 0 ? [...items] : [...items].reverse();
}

/** Runs each measurement once, one after another in run `run`'s order (inRunOrder); results by name. */
export async function measureInTurn<M extends Record<string, () => Promise<unknown>>>(
  measurements: M,
  run: number,
): Promise<{ [K in keyof M]: Awaited<ReturnType<M[K]>> }> {
  const results: Record<string, unknown> = {};
  for (const [name, measure] of inRunOrder(Object.entries(measurements), run))
    results[name] = await measure();
  return results as { [K in keyof M]: Awaited<ReturnType<M[K]>> };
}
