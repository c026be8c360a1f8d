import type { OrderEntry } from '../store/decide.js';
import type { SaleRedis } from '../redis.js';

/** One stream entry as Redis returns it. */
export type RawEntry = [id: string, fields: string[]];

/** A read from several streams: [stream key, entries][] (null when nothing arrived). */
export type StreamsReply = Array<[string, RawEntry[]]> | null;

export interface ReadEntry {
  readonly stream: string;
  readonly id: string;
  readonly fields: string[];
}

export function flattenReply(reply: StreamsReply): ReadEntry[] {
  if (!reply) return [];
  return reply.flatMap(([stream, entries]) =>
    // Entries deleted from the stream while pending come back with null fields.
    entries.map(([id, fields]) => ({ stream, id, fields: fields ?? [] })),
  );
}

/** Parses a reservation entry (written by reserve.lua); undefined if it is malformed. */
export function parseOrderEntry(saleId: string, entry: ReadEntry): OrderEntry | undefined {
  const map: Record<string, string> = {};
  for (let i = 0; i + 1 < entry.fields.length; i += 2)
    map[entry.fields[i] as string] = entry.fields[i + 1] as string;
  const quantity = Number(map.qty);
  const reservedAtMs = Number(entry.id.split('-')[0]); // the entry id is the reservation's Redis time
  if (
    !map.order ||
    !/^\d{1,20}$/.test(map.order) ||
    !map.user ||
    !Number.isSafeInteger(quantity) ||
    quantity < 1
  ) {
    return undefined;
  }
  if (!Number.isFinite(reservedAtMs)) return undefined;
  return { saleId, streamId: entry.id, orderId: map.order, userId: map.user, quantity, reservedAtMs };
}

/** "<ms>-<seq>" + 1: the smallest id greater than `id`. */
export function nextStreamId(id: string): string {
  const [ms, seq] = id.split('-');
  return `${ms}-${BigInt(seq ?? '0') + 1n}`;
}

/**
 * Removes entries every consumer has acknowledged: everything before the oldest pending entry, or,
 * with nothing pending, everything up to the last entry the group was given. Entries not yet
 * delivered are never touched.
 */
export async function trimAcknowledged(redis: SaleRedis, stream: string, group: string): Promise<number> {
  const groups = (await redis.xinfo('GROUPS', stream)) as Array<Array<string | number>>;
  const info = groups.map(toMap).find((g) => g.name === group);
  if (!info) return 0;
  const summary = (await redis.xpending(stream, group)) as [number, string | null, string | null, unknown];
  const minId =
    Number(summary[0]) > 0 && summary[1] ? summary[1] : nextStreamId(String(info['last-delivered-id']));
  return Number(await redis.xtrim(stream, 'MINID', minId));
}

function toMap(pairs: Array<string | number>): Record<string, string | number> {
  const map: Record<string, string | number> = {};
  for (let i = 0; i + 1 < pairs.length; i += 2) map[String(pairs[i])] = pairs[i + 1] as string | number;
  return map;
}
