import { ID_PATTERN } from '../keys.js';
import type { MoveEntry, PipelineEntry, StreamEntry } from '../store/decide.js';
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

const SETTLED = new Set(['paid', 'cancelled', 'expired']);

/**
 * Parses a sale stream entry: a reservation (written by reserve.lua: order, user, qty, and idem when
 * the purchase had an Idempotency-Key) or a lifecycle
 * event (written by settle-core.lua: event, order, user, qty); undefined if it is malformed. The entry
 * id is the Redis time it was written at.
 */
export function parseStreamEntry(saleId: string, entry: ReadEntry): PipelineEntry | undefined {
  const map: Record<string, string> = {};
  for (let i = 0; i + 1 < entry.fields.length; i += 2)
    map[entry.fields[i] as string] = entry.fields[i + 1] as string;
  const quantity = Number(map.qty);
  const atMs = Number(entry.id.split('-')[0]);
  if (
    !map.order ||
    !/^\d{1,20}$/.test(map.order) ||
    !map.user ||
    !Number.isSafeInteger(quantity) ||
    quantity < 1 ||
    !Number.isFinite(atMs)
  ) {
    return undefined;
  }
  const common = { saleId, streamId: entry.id, orderId: map.order, userId: map.user, quantity };
  if (map.event === undefined) {
    // The key came through ID_PATTERN at the API; anything else in an entry is dropped, not recorded.
    const idem = map.idem !== undefined && ID_PATTERN.test(map.idem) ? { idempotencyKey: map.idem } : {};
    return { kind: 'reservation', ...common, reservedAtMs: atMs, ...idem };
  }
  if (!SETTLED.has(map.event)) return undefined;
  return {
    kind: 'settlement',
    ...common,
    status: map.event as 'paid' | 'cancelled' | 'expired',
    settledAtMs: atMs,
  };
}

const MOVES: Record<string, MoveEntry['direction']> = { 'transfer-out': 'out', 'transfer-in': 'in' };

/**
 * Parses an entry of a split sale's part stream: reservations and settlements as in a sale's stream,
 * with their part (and the stream id the record keeps for them, "<ms>-<seq>@<part>": the parts'
 * streams have their own clocks, their ids can be equal), and the transfer steps (written by
 * transfer-out.lua / transfer-in.lua: event, transfer, part — the other part —, qty).
 */
export function parsePartEntry(saleId: string, part: number, entry: ReadEntry): StreamEntry | undefined {
  const event = valueOf(entry.fields, 'event');
  const direction = event === undefined ? undefined : MOVES[event];
  if (direction) {
    const transferId = valueOf(entry.fields, 'transfer');
    const otherPart = Number(valueOf(entry.fields, 'part'));
    const units = Number(valueOf(entry.fields, 'qty'));
    const atMs = Number(entry.id.split('-')[0]);
    if (
      !transferId ||
      !/^\d{1,20}$/.test(transferId) ||
      !Number.isSafeInteger(otherPart) ||
      otherPart < 0 ||
      !Number.isSafeInteger(units) ||
      units < 1 ||
      !Number.isFinite(atMs)
    ) {
      return undefined;
    }
    return { kind: 'move', saleId, part, streamId: entry.id, transferId, direction, otherPart, units, atMs };
  }
  const parsed = parseStreamEntry(saleId, entry);
  return parsed && { ...parsed, streamId: `${entry.id}@${part}`, part };
}

function valueOf(fields: readonly string[], name: string): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
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
