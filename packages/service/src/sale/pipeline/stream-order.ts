import { setTimeout as delay } from 'node:timers/promises';
import { ORDER_GROUP } from '../keys.js';
import type { SaleRedis } from '../redis.js';
import type { ReadEntry } from './stream.js';

/**
 * A sale's stream entries are recorded in stream order, although several consumers read them in
 * parallel. Redis decided each entry on everything before it in the stream: a purchase may take the
 * unit a cancellation (or an expiry) just before it gave back. Recorded out of order — the purchase
 * first — the record would see no free unit and reject an order its buyer was told was accepted.
 *
 * The order is kept with what the consumer group already tracks: an entry is pending from its
 * delivery until it is acknowledged, and it is acknowledged only after its transaction committed. A
 * batch is recorded only when no entry of its streams before its first is still pending, checked
 * while the batch's transaction holds its sales' row locks: every earlier entry then committed before
 * those locks were taken, so the transaction sees it.
 */

/**
 * Entries pending before a batch (delivered to another consumer, or left by one that failed): the
 * batch is not recorded yet and stays pending, to be read again (its consumer's own pending entries).
 */
export class EarlierEntriesPending extends Error {
  override readonly name = 'EarlierEntriesPending';

  constructor(readonly stream: string) {
    super(`entries of ${stream} before the batch are not recorded yet`);
  }
}

/** The largest stream id before `id` ("<ms>-<seq>"); undefined before the first possible id. */
export function previousId(id: string): string | undefined {
  const [ms, seq] = id.split('-').map((part) => BigInt(part)) as [bigint, bigint];
  if (seq > 0n) return `${ms}-${seq - 1n}`;
  if (ms > 0n) return `${ms - 1n}-18446744073709551615`;
  return undefined;
}

/** The first entry of each stream in a batch (a batch holds each stream's entries in stream order). */
function firstOfEachStream(entries: readonly ReadEntry[]): Map<string, string> {
  const first = new Map<string, string>();
  for (const entry of entries) if (!first.has(entry.stream)) first.set(entry.stream, entry.id);
  return first;
}

/** The first stream with an entry pending before the batch's entries of it; undefined: none. */
export async function streamWithEarlierPending(
  redis: SaleRedis,
  entries: readonly ReadEntry[],
): Promise<string | undefined> {
  for (const [stream, firstId] of firstOfEachStream(entries)) {
    const before = previousId(firstId);
    if (before === undefined) continue;
    try {
      const pending = (await redis.xpending(stream, ORDER_GROUP, '-', before, 1)) as unknown[];
      if (pending.length > 0) return stream;
    } catch (error) {
      // The stream or its group is gone (Redis restarted empty): nothing of it is pending.
      if (!/^NOGROUP/.test((error as Error).message)) throw error;
    }
  }
  return undefined;
}

/**
 * Waits, up to `limitMs`, until no entry before the batch is pending: usually a consumer that read
 * the entries just before is committing them. A consumer that died holds its entries until another
 * claims them (claimIdleMs), so the wait is bounded: past it the batch is given up for now (it stays
 * pending and is read again) and the step ends, which lets this consumer claim abandoned entries.
 */
export async function awaitEarlierEntries(
  redis: SaleRedis,
  entries: readonly ReadEntry[],
  limitMs: number,
): Promise<void> {
  const deadline = Date.now() + limitMs;
  let pause = 1;
  for (;;) {
    const stream = await streamWithEarlierPending(redis, entries);
    if (stream === undefined) return;
    if (Date.now() >= deadline) throw new EarlierEntriesPending(stream);
    await delay(pause);
    pause = Math.min(pause * 2, 5);
  }
}
