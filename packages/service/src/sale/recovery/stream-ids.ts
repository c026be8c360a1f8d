/** Stream entry ids ("<ms>-<seq>", Redis time) as recovery compares them. */

export type StreamId = readonly [ms: bigint, seq: bigint];

export function parseStreamId(id: string): StreamId | undefined {
  const match = /^(\d+)-(\d+)$/.exec(id);
  return match ? [BigInt(match[1] as string), BigInt(match[2] as string)] : undefined;
}

/** Negative, zero or positive as a sorts before, with or after b. */
export function compareStreamIds(a: StreamId, b: StreamId): number {
  if (a[0] !== b[0]) return a[0] < b[0] ? -1 : 1;
  return a[1] === b[1] ? 0 : a[1] < b[1] ? -1 : 1;
}

export const formatStreamId = (id: StreamId) => `${id[0]}-${id[1]}`;

/**
 * The newest entry the record holds: the newest reservation (exact), or the first id of the
 * millisecond of the newest settlement (the record keeps settlements' time, not their sequence).
 */
export function recordNewest(
  reservationIds: readonly string[],
  lastSettledMs: string | null,
): StreamId | undefined {
  let newest: StreamId | undefined;
  const consider = (id: StreamId | undefined) => {
    if (id && (!newest || compareStreamIds(id, newest) > 0)) newest = id;
  };
  for (const id of reservationIds) consider(parseStreamId(id));
  if (lastSettledMs !== null) consider([BigInt(lastSettledMs), 0n]);
  return newest;
}
