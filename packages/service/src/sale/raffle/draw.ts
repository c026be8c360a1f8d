import type { ScriptRunner } from 'lockstock/redis';
import type { SaleRedis } from '../redis.js';
import type { Database } from '../store/db.js';
import { recordEntries } from './entries.js';
import { raffleKeys, raffleQueries, raffleScripts } from './keys.js';
import { LEAF_ENTRIES, rootOfLeaves } from './merkle.js';
import { commitmentOf, type RaffleSigner } from './signing.js';

/** What the draw needs: Redis, the record, the scripts, and the signer of its close statement. */
export interface DrawDeps {
  redis: SaleRedis;
  db: Database;
  scripts: ScriptRunner;
  signer: RaffleSigner;
  keyPrefix?: string;
}

/** What one call to `drawRaffle` did. */
export interface DrawOutcome {
  /** 'drawn': this call ran the draw; 'already': someone had; 'not_due': the entry window is open. */
  readonly result: 'drawn' | 'already' | 'not_due' | 'not_found';
  /** Entries the draw ordered (this call's draw only). */
  readonly entries?: number;
  /** How long the draw's transaction took, ms (this call's draw only). */
  readonly ms?: number;
}

/**
 * Runs a raffle's draw if its entry window is over (on the record's clock), exactly once however many
 * processes call this at the same time:
 *
 * 1. Redis's entry window is closed now (window.lua), so no entry is accepted from here on and the
 *    entries stream holds every accepted entry the record may not have yet;
 * 2. those are recorded (entries.ts);
 * 3. one transaction takes the raffle's row FOR UPDATE (entry recorders wait on it), and if it is
 *    still in its entry window inserts every recorded entry's place into raffle_places (draw-order.sql:
 *    one INSERT … SELECT row_number(), the entries themselves are not rewritten) and marks it drawn. A
 *    second caller finds it drawn and does nothing. The draw is what the record holds: an entry Redis
 *    accepted and lost before it was recorded is not in it (README, "Raffle sales");
 * 4. in the same transaction, the close statement is signed and recorded: the commitment, the number
 *    of entries drawn and the Merkle root of their hashes (merkle.ts). Published with the list, it
 *    makes a list changed later detectable by `raffle verify`, and an entry whose receipt its holder
 *    keeps but which is not in it, a dropped entry.
 *
 * The winners are served by the waitlist (waitlist.ts), from the draw's first place on.
 */
export async function drawRaffle(deps: DrawDeps, saleId: string): Promise<DrawOutcome> {
  const { redis, db, scripts, signer } = deps;
  const due = await db.query<{ phase: string; due: boolean }>(raffleQueries.rafflePhase, [saleId]);
  const row = due.rows[0];
  if (!row) return { result: 'not_found' };
  if (row.phase !== 'entries') return { result: 'already' };
  if (!row.due) return { result: 'not_due' };
  const keys = raffleKeys(saleId, deps.keyPrefix);
  await scripts.run(raffleScripts.window, [keys.window], ['close']);
  await recordEntries(redis, db, saleId, deps.keyPrefix);
  await signer.publicKey(); // loaded before the row is locked
  const started = performance.now();
  return db.transaction(async (tx) => {
    const lock = await tx.query<{ phase: string; seed_hash: string; closes_at: Date; now: Date }>(
      raffleQueries.lockDraw,
      [saleId],
    );
    const raffle = lock.rows[0];
    if (raffle?.phase !== 'entries') return { result: 'already' } as const;
    const ordered = await tx.query(raffleQueries.drawOrder, [saleId]);
    const leaves = await tx.query<{ leaf: Uint8Array }>(raffleQueries.drawnLeaves, [saleId, LEAF_ENTRIES]);
    const close = await signer.sign({
      kind: 'lockstock.raffle.close.v1',
      commitment: commitmentOf(saleId, raffle.seed_hash, raffle.closes_at),
      entries: ordered.rowCount,
      root: rootOfLeaves(leaves.rows.map((r) => r.leaf)),
      closedAt: new Date(raffle.now).toISOString(),
    } as const);
    await tx.query(raffleQueries.drawDone, [saleId, ordered.rowCount, JSON.stringify(close)]);
    return { result: 'drawn', entries: ordered.rowCount, ms: performance.now() - started } as const;
  });
}

/**
 * Ends a raffle's entry window now, then draws (an operator who does not wait for drawAt; tests, the
 * lab). Returns the draw's outcome ('already' for a raffle drawn before).
 */
export async function drawNow(deps: DrawDeps, saleId: string): Promise<DrawOutcome> {
  await deps.db.query(raffleQueries.closeNow, [saleId]);
  return drawRaffle(deps, saleId);
}
