import type { ScriptRunner } from 'lockstock/redis';
import { parsePartEntry } from '../pipeline/stream.js';
import type { SaleRedis } from '../redis.js';
import { readWholeStream } from './record-reads.js';
import type { MoveEntry } from '../store/decide.js';
import type { RecordedMove, StreamMove } from '../shards/allocation.js';
import type { PartKeys } from '../shards/layout.js';
import { partScripts } from '../shards/scripts.js';

/** A donor part's state as one atomic read: is it there, is it being rebuilt, what it owes. */
type DonorReply = [[null, number], [null, number], [null, string[]]];

/** Its donor is missing or being rebuilt: what it owes is not known yet; the rebuild is tried again. */
export class DonorNotReadyError extends Error {
  override readonly name = 'DonorNotReadyError';
}

/**
 * Transfers credited to `part` whose credit Redis lost before any pipeline read it (its master wiped,
 * or restarted empty): a debit to the part is known — recorded, or still in its donor's stream — and
 * its credit is not — neither recorded nor in the part's stream — and the donor no longer owes it.
 * A donor forgets a transfer only after the receiver answered "credited", and since the part's
 * rebuild flag is up (before this is called) and since its data was lost (no stock: "missing"), no
 * credit can be made to it; so such a transfer was credited, and its units are the part's. Returned
 * as stream moves into the part, for its allocation; restored with `restoreLostCredits`.
 *
 * Order matters: the donors' streams and owed transfers are read after the record, so a transfer
 * debited meanwhile is still owed when looked at (never taken for credited). Throws
 * DonorNotReadyError if a donor is missing or being rebuilt itself (its owed transfers are not known).
 */
export async function findLostCredits(
  redis: SaleRedis,
  saleId: string,
  part: number,
  parts: readonly PartKeys[],
  recorded: readonly RecordedMove[],
  ownStream: readonly StreamMove[],
): Promise<StreamMove[]> {
  const credited = new Set<string>();
  const debited = new Map<string, { from: number; units: number }>();
  for (const m of recorded) {
    if (m.kind === 'in') credited.add(m.transferId);
    else if (m.otherPart === part && m.part !== part)
      debited.set(m.transferId, { from: m.part, units: m.units });
  }
  for (const m of ownStream) if (m.direction === 'in') credited.add(m.transferId);
  for (const donor of parts) {
    if (donor.part === part) continue;
    const entries = await readWholeStream(redis, donor.stream, (raw) =>
      parsePartEntry(saleId, donor.part, raw),
    );
    for (const e of entries) {
      if (e.kind !== 'move') continue;
      const move = e as MoveEntry;
      if (move.direction === 'out' && move.otherPart === part)
        debited.set(move.transferId, { from: donor.part, units: move.units });
    }
  }
  const unknown = [...debited].filter(([id]) => !credited.has(id));
  if (unknown.length === 0) return [];
  const owed = new Map<number, Set<string>>();
  for (const from of new Set(unknown.map(([, d]) => d.from))) {
    const donor = parts[from] as PartKeys;
    const [[, stock], [, recovering], [, pending]] = (await redis
      .multi()
      .exists(donor.stock)
      .exists(donor.recovering)
      .hkeys(donor.transfers)
      .exec()) as unknown as DonorReply;
    if (stock === 0 || recovering === 1)
      throw new DonorNotReadyError(`part ${from} of sale ${saleId} is missing or being rebuilt`);
    owed.set(from, new Set(pending));
  }
  return unknown
    .filter(([id, d]) => !owed.get(d.from)?.has(id))
    .map(([id, d]) => ({ transferId: id, direction: 'in', otherPart: d.from, units: d.units }));
}

/** Puts the lost credits back (restore-lost-credit.lua), under the rebuild's token. */
export async function restoreLostCredits(
  scripts: ScriptRunner,
  keys: PartKeys,
  token: string,
  lost: readonly StreamMove[],
): Promise<boolean> {
  for (const m of lost) {
    const done = await scripts.run(
      partScripts.restoreLostCredit,
      [keys.recovering, keys.credits, keys.stream],
      [token, m.transferId, m.otherPart, m.units],
    );
    if (done !== 1) return false;
  }
  return true;
}
