import type { ScriptRunner } from 'lockstock/redis';
import type { SaleRedis } from '../redis.js';
import type { Database, Queryable } from '../store/db.js';
import { recordEntries } from './entries.js';
import { raffleKeys, raffleQueries, raffleScripts } from './keys.js';
import { LEAF_ENTRIES, rootOfLeaves } from './merkle.js';
import {
  drawSeedOf,
  roundAfter,
  roundHolds,
  roundTime,
  sameChain,
  type BeaconChain,
  type BeaconSource,
} from './beacon.js';
import { commitmentOf, type CloseStatement, type RaffleSigner } from './signing.js';

/** What the draw needs: Redis, the record, the scripts, the signer of its close statement, a beacon. */
export interface DrawDeps {
  redis: SaleRedis;
  db: Database;
  scripts: ScriptRunner;
  signer: RaffleSigner;
  /** Where rounds come from, for raffles created with a beacon (beacon.ts). */
  beacon?: BeaconSource;
  keyPrefix?: string;
}

/**
 * Why a closed raffle's draw waits: its beacon round is not out yet (the relay has none), or this
 * process has no source of the raffle's chain (LOCKSTOCK_BEACON_URL unset, or a relay of another chain).
 */
export const AWAITING_REASONS = ['round_not_out', 'no_beacon_source'] as const;
export type AwaitingReason = (typeof AWAITING_REASONS)[number];

/** What one call to `drawRaffle` did. */
export interface DrawOutcome {
  /**
   * 'drawn': this call ran the draw; 'already': someone had; 'not_due': the entry window is open;
   * 'awaiting_beacon': the entries are closed, the draw waits for its beacon round (`reason`).
   */
  readonly result: 'drawn' | 'already' | 'not_due' | 'not_found' | 'awaiting_beacon';
  /** Entries the draw ordered (this call's draw only). */
  readonly entries?: number;
  /** How long the draw's transaction took, ms (this call's draw only). */
  readonly ms?: number;
  /** The beacon round awaited or used. */
  readonly round?: number;
  /** When the awaited round is due, by its chain's schedule (awaiting_beacon). */
  readonly roundAt?: Date;
  /** Why the draw waits (awaiting_beacon), and that said in a sentence (`message`). */
  readonly reason?: AwaitingReason;
  readonly message?: string;
}

interface LockedRaffle {
  phase: string;
  seed_hash: string;
  seed: Buffer;
  closes_at: Date;
  beacon: BeaconChain | null;
  close: CloseStatement | null;
  now: Date;
}

/**
 * Runs a raffle's draw if its entry window is over (on the record's clock), exactly once however many
 * processes call this at the same time:
 *
 * 1. Redis's entry window is closed now (window.lua), so no entry is accepted from here on and the
 *    entries stream holds every accepted entry the record may not have yet;
 * 2. those are recorded (entries.ts);
 * 3. the close: one transaction takes the raffle's row FOR UPDATE (entry recorders wait on it) and, if
 *    it is still in its entry window, signs the close statement: the commitment, the number of
 *    entries and the Merkle root of their hashes (merkle.ts), and for a raffle with a beacon the round
 *    the draw will use: the first after the committed close (closesAt, fixed at creation, not the
 *    time of this close: an operator signing a backdated closedAt could otherwise pick a round that
 *    was already out; an early draw waits for that round). Published with the list, it makes a
 *    list changed later detectable by `raffle verify`, and an entry whose receipt its holder keeps
 *    but which is not in it, a dropped entry. The record's draw is what it holds: an entry Redis
 *    accepted and lost before it was recorded is not in it (README, "Raffle sales");
 * 4. the places: every recorded entry's place written into raffle_place_blocks (draw-order.sql, one
 *    statement: sorted by the draw key, 1,024 places a row) ordered by the draw seed, and the raffle
 *    marked drawn with that seed. Without a beacon this is the close's own transaction (seed = the committed seed). With one, the raffle is
 *    marked 'closed' and the places wait for the round: fetched, checked against the chain's key, and
 *    mixed in (drawSeedOf), in a second transaction under the same lock. A second caller finds it
 *    drawn and does nothing.
 *
 * The winners are served by the waitlist (waitlist.ts), from the draw's first place on.
 */
export async function drawRaffle(deps: DrawDeps, saleId: string): Promise<DrawOutcome> {
  const { redis, db, scripts, signer } = deps;
  const due = await db.query<{ phase: string; due: boolean }>(raffleQueries.rafflePhase, [saleId]);
  const row = due.rows[0];
  if (!row) return { result: 'not_found' };
  if (row.phase === 'drawn') return { result: 'already' };
  if (row.phase === 'entries') {
    if (!row.due) return { result: 'not_due' };
    const keys = raffleKeys(saleId, deps.keyPrefix);
    await scripts.run(raffleScripts.window, [keys.window], ['close']);
    await recordEntries(redis, db, saleId, deps.keyPrefix);
  }
  await signer.publicKey(); // loaded before the row is locked
  const started = performance.now();
  const closed = await db.transaction(async (tx) => {
    const raffle = (await tx.query<LockedRaffle>(raffleQueries.lockDraw, [saleId])).rows[0];
    if (raffle?.phase !== 'entries') return raffle;
    await tx.query(raffleQueries.drawSettings);
    const leaves = await tx.query<{ leaf: Uint8Array; entries: number }>(raffleQueries.drawnLeaves, [
      saleId,
      LEAF_ENTRIES,
    ]);
    const closedAt = new Date(raffle.now);
    const close = await signer.sign({
      kind: 'lockstock.raffle.close.v1',
      commitment: commitmentOf(saleId, raffle.seed_hash, raffle.closes_at, raffle.beacon),
      entries: leaves.rows[0]?.entries ?? 0,
      root: rootOfLeaves(leaves.rows.map((r) => r.leaf)),
      closedAt: closedAt.toISOString(),
      ...(raffle.beacon ? { round: roundAfter(raffle.beacon, new Date(raffle.closes_at).getTime()) } : {}),
    } as const);
    if (raffle.beacon) {
      await tx.query(raffleQueries.closeDone, [saleId, JSON.stringify(close)]);
      return { ...raffle, phase: 'closed', close };
    }
    const entries = await drawPlaces(tx, saleId, raffle.seed);
    await tx.query(raffleQueries.drawDone, [saleId, entries, JSON.stringify(close), null, raffle.seed]);
    return { ...raffle, phase: 'drawn-now', close };
  });
  if (closed?.phase === 'drawn-now') {
    return { result: 'drawn', entries: closed.close?.payload.entries ?? 0, ms: performance.now() - started };
  }
  if (closed?.phase !== 'closed' || !closed.beacon || !closed.close) return { result: 'already' };
  return drawWithBeacon(deps, saleId, closed.beacon, closed.close);
}

/** The places of a closed raffle, once its beacon round is out (step 4 with a beacon). */
async function drawWithBeacon(
  deps: DrawDeps,
  saleId: string,
  chain: BeaconChain,
  close: CloseStatement,
): Promise<DrawOutcome> {
  const round = roundAfter(chain, Date.parse(close.payload.commitment.closesAt));
  const roundAt = new Date(roundTime(chain, round));
  const source = deps.beacon;
  if (!source || !sameChain(source.chain, chain)) {
    return {
      result: 'awaiting_beacon',
      round,
      roundAt,
      reason: 'no_beacon_source',
      message: `no source of beacon ${chain.chainHash} here: the draw waits for round ${round} from a process that has one (LOCKSTOCK_BEACON_URL, LOCKSTOCK_BEACON_CHAIN)`,
    };
  }
  const value = await source.round(round).catch((error: unknown) => {
    throw new BeaconError(
      `beacon round ${round} could not be fetched: ${String(error)}`,
      round,
      'unreachable',
      {
        cause: error,
      },
    );
  });
  if (!value) {
    const message = `drand round ${round} is not out yet (due ${roundAt.toISOString()}): the draw runs once it is`;
    return { result: 'awaiting_beacon', round, roundAt, reason: 'round_not_out', message };
  }
  if (!roundHolds(chain, value)) {
    // A relay that answers with a bad signature is not used (the draw tries again next time).
    throw new BeaconError(
      `beacon round ${round} from the source is NOT signed by the chain's key`,
      round,
      'forged',
    );
  }
  const started = performance.now();
  return deps.db.transaction(async (tx) => {
    const raffle = (await tx.query<LockedRaffle>(raffleQueries.lockDraw, [saleId])).rows[0];
    if (raffle?.phase !== 'closed') return { result: 'already' } as const;
    await tx.query(raffleQueries.drawSettings);
    const drawSeed = drawSeedOf(raffle.seed, value);
    const entries = await drawPlaces(tx, saleId, drawSeed);
    const beaconRound = { round: value.round, signature: value.signature };
    await tx.query(raffleQueries.drawDone, [
      saleId,
      entries,
      JSON.stringify(raffle.close),
      JSON.stringify(beaconRound),
      drawSeed,
    ]);
    return { result: 'drawn', entries, ms: performance.now() - started, round };
  });
}

/** Writes the places of every recorded entry (draw-order.sql); returns how many. */
async function drawPlaces(tx: Queryable, saleId: string, drawSeed: Buffer): Promise<number> {
  const { rows } = await tx.query<{ entries: number }>(raffleQueries.drawOrder, [saleId, drawSeed]);
  return rows[0]?.entries ?? 0;
}

/** The beacon round could not be had: the source failed, or answered a round its chain did not sign. */
export class BeaconError extends Error {
  override readonly name = 'BeaconError';
  constructor(
    message: string,
    /** The round the draw needs. */
    readonly round: number,
    /** 'unreachable': the source did not answer; 'forged': it answered a signature the chain did not make. */
    readonly kind: 'unreachable' | 'forged',
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * Ends a raffle's entry window now, then draws (an operator who does not wait for drawAt; tests, the
 * lab). Returns the draw's outcome ('already' for a raffle drawn before).
 */
export async function drawNow(deps: DrawDeps, saleId: string): Promise<DrawOutcome> {
  await deps.db.query(raffleQueries.closeNow, [saleId]);
  return drawRaffle(deps, saleId);
}
