import { createHash, randomBytes } from 'node:crypto';
import type { ScriptRunner } from 'lockstock/redis';
import type { SaleContext } from '../context/context.js';
import { isRecordId } from '../ids/canonical.js';
import type { Database } from '../store/db.js';
import type { NewRaffleRecord } from '../store/records.js';
import type { BeaconChain, BeaconRound, BeaconSource } from './beacon.js';
import { drawNow, drawRaffle, type DrawOutcome } from './draw.js';
import { enter, recordEntries, type EntryResult } from './entries.js';
import { raffleKeys, raffleQueries, raffleScripts } from './keys.js';
import {
  commitmentOf,
  RaffleSigner,
  type CloseStatement,
  type EntryReceipt,
  type PublicSigningKey,
  type RaffleCommitment,
} from './signing.js';
import { serveWaitlist, type ServeOutcome } from './waitlist.js';

/**
 * A raffle's phase: taking entries; closed (the entry list fixed and signed, the draw waiting for its
 * beacon round); or drawn (its winners served, its waitlist waiting).
 */
export type RafflePhase = 'entries' | 'closed' | 'drawn';

/** A raffle as the API shows it. */
export interface RaffleView {
  readonly saleId: string;
  readonly phase: RafflePhase;
  /** Hex SHA-256 of the seed: published at creation, before any entry (the commitment). */
  readonly seedHash: string;
  /** The seed (hex), revealed once drawn. */
  readonly seed?: string;
  readonly drawAt: Date;
  readonly drawnAt?: Date;
  readonly stock: number;
  /** Entries: accepted (Redis) while entries are open; drawn (the record) afterwards. */
  readonly entries: number;
  /** Entrants given a unit (recorded orders, whatever became of them). */
  readonly winners: number;
  readonly paid: number;
  /** Entrants still in line for a unit that comes back (drawn, sale not ended). */
  readonly waitlist: number;
}

/** A raffle as the dashboard shows it; 'drawing': the entry window is over, the draw not done yet. */
export interface RaffleSummary {
  /** 'drawing' also while closed (the draw waiting for its beacon round). */
  readonly phase: Exclude<RafflePhase, 'closed'> | 'drawing';
  readonly entries: number;
  readonly winners: number;
  readonly paid: number;
  readonly waitlist: number;
}

/**
 * The published data anyone verifies a draw with (`lockstock raffle verify`). What it says about its
 * own commitment and key is checked against a receipt or the command line, never taken on its word.
 */
export interface PublishedRaffle {
  readonly saleId: string;
  readonly seedHash: string;
  readonly seed?: string;
  /** As the service states it now (verify compares it with the receipt's). */
  readonly commitment?: RaffleCommitment;
  /** The signed close statement: entries drawn and their Merkle root (once closed). */
  readonly close?: CloseStatement;
  /** The beacon round the draw mixed in (drawn with a beacon only; beacon.ts). */
  readonly beaconRound?: BeaconRound;
  readonly key?: PublicSigningKey;
  readonly phase: RafflePhase;
  readonly stock: number;
  /** Every recorded entry: its hashed id, its place (once drawn), whether it was given a unit. */
  readonly entries: ReadonlyArray<{ hash: string; position?: number; won: boolean }>;
}

/** One buyer's entry. */
export interface EntryView {
  readonly entryHash: string;
  /** 'entered' (not drawn yet), 'won' (given a unit: see orderId), 'waitlisted', 'not_drawn' (final). */
  readonly status: 'entered' | 'won' | 'waitlisted' | 'not_drawn';
  readonly position?: number;
  readonly orderId?: string;
  /** Entrants ahead in line (waitlisted only). */
  readonly ahead?: number;
}

export interface RaffleServiceDeps {
  context: SaleContext;
  db: Database;
  /** Order ids for the winners (SnowflakeIdGenerator.next); needed only to `serve`. */
  nextOrderId?: () => string;
  /** Where the beacon rounds of raffles created with a beacon come from (beacon.ts). */
  beacon?: BeaconSource;
}

/**
 * Raffle sales (README "Raffle sales"): entries in Redis (enter.lua), recorded in PostgreSQL
 * (entries.ts), one draw from the record (draw.ts), winners and waitlist served in draw order as
 * ordinary reservations (waitlist.ts). RaffleRunner runs the recording, draws and waitlists in the
 * background; this class is also the programmatic way in (tests, the lab).
 */
export class RaffleService {
  private readonly scripts: ScriptRunner;
  private readonly prefix: string;
  /** Signs entry receipts and close statements (signing.ts). */
  readonly signer: RaffleSigner;
  /** Each raffle's commitment, fixed at its creation (so a receipt costs no query). */
  private readonly commitments = new Map<string, RaffleCommitment>();

  constructor(private readonly deps: RaffleServiceDeps) {
    ({ scripts: this.scripts, prefix: this.prefix } = deps.context);
    this.signer = new RaffleSigner(deps.db);
  }

  /** A raffle's commitment (seed hash, close time), as receipts carry it; undefined if no raffle. */
  async commitment(saleId: string): Promise<RaffleCommitment | undefined> {
    const known = this.commitments.get(saleId);
    if (known) return known;
    if (!isRecordId(saleId)) return undefined;
    const { rows } = await this.deps.db.query<RaffleRow>(raffleQueries.getRaffle, [saleId]);
    const row = rows[0];
    if (!row) return undefined;
    const commitment = commitmentOf(row.sale_id, row.seed_hash, row.closes_at, row.beacon);
    if (this.commitments.size >= 10_000) this.commitments.clear();
    this.commitments.set(saleId, commitment);
    return commitment;
  }

  /**
   * The signed receipt of an accepted entry: its hash and the raffle's commitment. Its holder can
   * show later that the entry was accepted under that commitment (`raffle verify --receipt`).
   */
  async receipt(saleId: string, entryHash: string): Promise<EntryReceipt | undefined> {
    const commitment = await this.commitment(saleId);
    if (!commitment) return undefined;
    return this.signer.sign({ kind: 'lockstock.raffle.entry.v1', entryHash, commitment } as const);
  }

  /** Loads a raffle's entry window into Redis if Redis has none (never moves one it has). */
  async warm(saleId: string): Promise<boolean> {
    const { rows } = await this.deps.db.query<{ phase: string; starts_at: Date; draw_at: Date }>(
      raffleQueries.rafflePhase,
      [saleId],
    );
    const row = rows[0];
    if (!row) return false;
    const keys = raffleKeys(saleId, this.prefix);
    // A drawn raffle's window is written closed: no entry after the draw, whatever Redis lost.
    const closes = row.phase === 'entries' ? new Date(row.draw_at).getTime() : 0;
    await this.scripts.run(
      raffleScripts.window,
      [keys.window],
      ['load', new Date(row.starts_at).getTime(), closes],
    );
    return true;
  }

  /** A buyer enters (idempotent). */
  async enter(saleId: string, userId: string): Promise<EntryResult> {
    if (!isRecordId(saleId)) return { ok: false, code: 'not_found' };
    return enter(this.scripts, raffleKeys(saleId, this.prefix), saleId, userId, () => this.warm(saleId));
  }

  /** Records the entries Redis holds that the record does not yet. */
  recordEntries(saleId: string): Promise<number> {
    return recordEntries(this.deps.context.redis, this.deps.db, saleId, this.prefix);
  }

  /** Draws if the entry window is over (once, whoever calls); see draw.ts. */
  draw(saleId: string): Promise<DrawOutcome> {
    return drawRaffle(this.drawDeps(), saleId);
  }

  /** Closes the entries now and draws (an operator's early draw). */
  drawNow(saleId: string): Promise<DrawOutcome> {
    return drawNow(this.drawDeps(), saleId);
  }

  /** Serves the draw order with the units left (the winners, then the waitlist); see waitlist.ts. */
  serve(saleId: string): Promise<ServeOutcome> {
    const { nextOrderId } = this.deps;
    if (!nextOrderId) throw new TypeError('RaffleService: serve needs nextOrderId');
    return serveWaitlist({ ...this.drawDeps(), nextOrderId }, saleId);
  }

  private drawDeps() {
    return {
      redis: this.deps.context.redis,
      db: this.deps.db,
      scripts: this.scripts,
      signer: this.signer,
      keyPrefix: this.prefix,
      ...(this.deps.beacon ? { beacon: this.deps.beacon } : {}),
    };
  }

  /** A raffle's phase and counts; undefined if the sale is not a raffle. */
  async view(saleId: string): Promise<RaffleView | undefined> {
    if (!isRecordId(saleId)) return undefined;
    const { rows } = await this.deps.db.query<RaffleRow>(raffleQueries.getRaffle, [saleId]);
    const row = rows[0];
    if (!row) return undefined;
    const keys = raffleKeys(saleId, this.prefix);
    const drawn = row.phase === 'drawn';
    let entries = row.entries;
    let waitlist = 0;
    if (!drawn) {
      entries = Math.max(entries, await this.deps.context.redis.hlen(keys.entrants));
    } else if (new Date(row.ends_at).getTime() > Date.now()) {
      const cursor = await this.deps.context.redis.get(keys.cursor);
      const served = cursor === null ? row.winners : Number(cursor) - 1;
      waitlist = Math.max(0, row.entries - served);
    }
    return {
      saleId: row.sale_id,
      phase: row.phase,
      seedHash: row.seed_hash,
      ...(row.seed ? { seed: row.seed } : {}),
      drawAt: new Date(row.draw_at),
      ...(row.drawn_at ? { drawnAt: new Date(row.drawn_at) } : {}),
      stock: row.stock,
      entries,
      winners: row.winners,
      paid: row.paid,
      waitlist,
    };
  }

  /** The raffles among `saleIds`, summarised (one query, then Redis for the live counts). */
  async summaries(saleIds: readonly string[]): Promise<Map<string, RaffleSummary>> {
    const summaries = new Map<string, RaffleSummary>();
    if (saleIds.length === 0) return summaries;
    const { rows } = await this.deps.db.query<{
      sale_id: string;
      phase: RafflePhase;
      due: boolean;
      ends_at: Date | string;
      entries: number;
      winners: number;
      paid: number;
    }>(raffleQueries.raffleSummaries, [saleIds]);
    for (const row of rows) {
      const keys = raffleKeys(row.sale_id, this.prefix);
      let { entries } = row;
      let waitlist = 0;
      if (row.phase === 'entries') {
        entries = Math.max(entries, await this.deps.context.redis.hlen(keys.entrants));
      } else if (new Date(row.ends_at).getTime() > Date.now()) {
        const cursor = await this.deps.context.redis.get(keys.cursor);
        waitlist = Math.max(0, entries - (cursor === null ? row.winners : Number(cursor) - 1));
      }
      const phase = (row.phase === 'entries' && row.due) || row.phase === 'closed' ? 'drawing' : row.phase;
      summaries.set(row.sale_id, { phase, entries, winners: row.winners, paid: row.paid, waitlist });
    }
    return summaries;
  }

  /** The published entry list (hashed ids), with the seed once drawn; undefined if not a raffle. */
  async published(saleId: string): Promise<PublishedRaffle | undefined> {
    const raffle = await this.view(saleId);
    if (!raffle) return undefined;
    const { rows } = await this.deps.db.query<{ entry_hash: string; position: number | null; won: boolean }>(
      raffleQueries.publishedEntries,
      [saleId],
    );
    const row = (await this.deps.db.query<RaffleRow>(raffleQueries.getRaffle, [saleId])).rows[0];
    return {
      saleId,
      seedHash: raffle.seedHash,
      ...(raffle.seed ? { seed: raffle.seed } : {}),
      ...(row ? { commitment: commitmentOf(saleId, row.seed_hash, row.closes_at, row.beacon) } : {}),
      ...(row?.close ? { close: row.close } : {}),
      ...(row?.beacon_round ? { beaconRound: row.beacon_round } : {}),
      key: await this.signer.publicKey(),
      phase: raffle.phase,
      stock: raffle.stock,
      entries: rows.map((r) => ({
        hash: r.entry_hash,
        ...(r.position === null ? {} : { position: r.position }),
        won: r.won,
      })),
    };
  }

  /**
   * A buyer's entry as the record has it (an entry accepted moments ago may not be recorded yet:
   * then 'entered' from Redis); undefined if they did not enter.
   */
  async entryOf(saleId: string, userId: string): Promise<EntryView | undefined> {
    if (!isRecordId(saleId)) return undefined;
    const { rows } = await this.deps.db.query<{
      entry_hash: string;
      position: number | null;
      order_id: string | null;
    }>(raffleQueries.entryOf, [saleId, userId]);
    const row = rows[0];
    const keys = raffleKeys(saleId, this.prefix);
    if (!row) {
      const hash = await this.deps.context.redis.hget(keys.entrants, userId);
      return hash ? { entryHash: hash, status: 'entered' } : undefined;
    }
    if (row.order_id) {
      return { entryHash: row.entry_hash, status: 'won', orderId: row.order_id, ...place(row.position) };
    }
    if (row.position === null) return { entryHash: row.entry_hash, status: 'entered' };
    const [cursor, open] = await this.deps.context.redis.mget(keys.cursor, keys.sale.open);
    if (open === null || cursor === null) {
      return {
        entryHash: row.entry_hash,
        status: open === null ? 'not_drawn' : 'waitlisted',
        position: row.position,
      };
    }
    // Served but not recorded yet: won, its order moments from the record.
    if (row.position < Number(cursor))
      return { entryHash: row.entry_hash, status: 'won', position: row.position };
    return {
      entryHash: row.entry_hash,
      status: 'waitlisted',
      position: row.position,
      ahead: row.position - Number(cursor),
    };
  }
}

/**
 * A new raffle's draw settings: a seed from the OS's CSPRNG, kept secret in the record until the draw,
 * and its SHA-256, published at once (the commitment: the seed cannot be chosen after the entries).
 */
export function newRaffle(drawAt: Date): NewRaffleRecord {
  const seed = randomBytes(32);
  return { seed, seedHash: createHash('sha256').update(seed).digest('hex'), drawAt };
}

const place = (position: number | null) => (position === null ? {} : { position });

interface RaffleRow {
  sale_id: string;
  seed_hash: string;
  seed: string | null;
  phase: RafflePhase;
  draw_at: Date | string;
  closes_at: Date | string;
  close: CloseStatement | null;
  beacon: BeaconChain | null;
  beacon_round: BeaconRound | null;
  drawn_at: Date | string | null;
  stock: number;
  ends_at: Date | string;
  entries: number;
  winners: number;
  paid: number;
}
