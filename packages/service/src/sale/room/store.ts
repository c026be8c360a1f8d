import type { SaleContext } from '../context/context.js';
import { sqlIn } from '../../support/assets.js';
import { isRecordId } from '../ids/canonical.js';
import { ORDER_GROUP } from '../keys.js';
import { RoomMissingError } from '../recovering.js';
import type { SaleRedis } from '../redis.js';
import type { Queryable } from '../store/db.js';
import { roomKeys } from './keys.js';
import type { RoomSettings } from './settings.js';

const sql = sqlIn(new URL('./sql/', import.meta.url));
const queries = { insertRoom: sql('insert-room'), getRoom: sql('get-room'), setPaused: sql('set-paused') };

/** A sale's room as the scripts and routes need it: its settings and when the sale starts. */
export interface Room extends RoomSettings {
  readonly openAt: number;
}

/** What `RoomStore.roomOf` knows of a sale: its room, none, or that there is no such sale. */
export type RoomLookup = Room | 'none' | 'no_sale';

interface RoomRow {
  starts_at: Date | string;
  rate_per_sec: number | null;
  pow_bits: number | null;
  ticket_seconds: number | null;
  admission_seconds: number | null;
  shuffle_seconds: number | null;
  notice_seconds: number | null;
  max_active: number | null;
  max_backlog: number | null;
  paused: boolean | null;
}

/** How long "no such sale" is believed (a sale created meanwhile is refused as missing that long). */
const NO_SALE_MS = 1000;

/**
 * Where a sale's waiting room is kept: the record (sale_rooms, in the sale's creation transaction)
 * and Redis (the room's config hash, which the room's scripts read). A sale's room never changes
 * after creation, so each process remembers the answer per sale once it knows the sale exists. Redis
 * is asked first; a sale without a room there is looked up in the record, which puts a room Redis
 * lost back; with the record down too, the room is unknown and the purchase is refused with a 503
 * (fail closed: a sale Redis forgot is never sold without its room).
 */
export class RoomStore {
  private readonly known = new Map<string, Room | 'none'>();
  private readonly missing = new Map<string, number>();
  /** The restores under way of rooms Redis lost (`lost`): one per sale, however many requests met it. */
  private readonly restoring = new Map<string, Promise<unknown>>();
  private readonly prefix: string;
  private readonly redis: SaleRedis;

  constructor(
    context: SaleContext,
    private readonly db: Queryable,
  ) {
    ({ redis: this.redis, prefix: this.prefix } = context);
  }

  /** Records a new sale's room (in its creation transaction `tx`). */
  async record(tx: Queryable, saleId: string, room: RoomSettings): Promise<void> {
    await tx.query(queries.insertRoom, [
      saleId,
      room.ratePerSec,
      room.powBits,
      room.ticketSeconds,
      room.admissionSeconds,
      room.shuffleSeconds,
      room.noticeSeconds,
      room.maxActive,
      room.maxBacklog,
    ]);
  }

  /**
   * Puts a recorded sale's room into Redis: before its stock, so nobody buys before the room is on.
   * `paused`: the record's switch (a room Redis lost comes back as the operator left it).
   */
  async open(saleId: string, room: Room, paused = false): Promise<void> {
    await this.redis.hset(roomKeys(saleId, this.prefix).config, {
      rate: room.ratePerSec,
      openAt: room.openAt,
      shuffleMs: room.shuffleSeconds * 1000,
      admitMs: (room.noticeSeconds + room.admissionSeconds) * 1000,
      noticeMs: room.noticeSeconds * 1000,
      powBits: room.powBits,
      ticketMs: room.ticketSeconds * 1000,
      maxActive: room.maxActive,
      maxBacklog: room.maxBacklog,
      orderGroup: ORDER_GROUP,
      paused: paused ? 1 : 0,
    });
    this.known.set(saleId, room);
  }

  /**
   * Marks a new sale as one without a room, in Redis (before its stock, as `open` does for a room):
   * a process's first purchase of the sale then learns it from Redis, without asking the record (a
   * round trip to PostgreSQL that held that process's first buyers back while another sold the stock).
   */
  async openNone(saleId: string): Promise<void> {
    await this.redis.hset(roomKeys(saleId, this.prefix).config, { none: 1 });
    this.known.set(saleId, 'none');
  }

  /** What this process remembers of a sale's room, without asking anyone (undefined: not known yet). */
  remembered(saleId: string): Room | 'none' | undefined {
    return this.known.get(saleId);
  }

  /** A sale's room, `'none'`, or `'no_sale'` (from memory, else Redis, else the record). */
  async roomOf(saleId: string): Promise<RoomLookup> {
    const known = this.known.get(saleId);
    if (known) return known;
    if (!isRecordId(saleId)) return 'no_sale';
    const missingUntil = this.missing.get(saleId);
    if (missingUntil !== undefined && missingUntil > Date.now()) return 'no_sale';
    const config = await this.redis.hgetall(roomKeys(saleId, this.prefix).config);
    if (config.none !== undefined) {
      this.known.set(saleId, 'none');
      return 'none';
    }
    if (config.rate !== undefined) {
      const room = roomOfConfig(config);
      this.known.set(saleId, room);
      return room;
    }
    // Redis has no room for this sale: the record says. If the record is down, the room cannot be
    // known and the error goes up as a 503 (fail closed). Answering "no room" there once sold a sale
    // whose room Redis had lost to buyers never admitted. A sale Redis can sell has its room (or its
    // "no room" marker) there: creation, the start-up warm and every rebuild write it before the stock.
    const found = await this.restore(saleId);
    if (found === 'no_sale') {
      if (this.missing.size > 10_000) this.missing.clear();
      this.missing.set(saleId, Date.now() + NO_SALE_MS);
    }
    return found;
  }

  /**
   * Puts a sale's room (or its "no room" marker) back into Redis from the record, whatever this
   * process remembers: a rebuild and the start-up warm call it before the stock returns. Throws when
   * the record cannot be read.
   */
  async restore(saleId: string): Promise<Room | 'none' | 'no_sale'> {
    const { rows } = await this.db.query<RoomRow>(queries.getRoom, [saleId]);
    const row = rows[0];
    if (!row) return 'no_sale';
    if (row.rate_per_sec === null) {
      await this.openNone(saleId);
      return 'none';
    }
    const room: Room = {
      openAt: new Date(row.starts_at).getTime(),
      ratePerSec: Number(row.rate_per_sec),
      powBits: Number(row.pow_bits),
      ticketSeconds: Number(row.ticket_seconds),
      admissionSeconds: Number(row.admission_seconds),
      shuffleSeconds: Number(row.shuffle_seconds),
      noticeSeconds: Number(row.notice_seconds),
      maxActive: Number(row.max_active ?? 0),
      maxBacklog: Number(row.max_backlog ?? 0),
    };
    await this.open(saleId, room, row.paused === true);
    return room;
  }

  /**
   * A script found no room in Redis for a sale this process knows has one (Redis lost the room's key:
   * with its slot's data, which for a split sale may be on a master that holds none of its parts, or
   * alone). The room goes back from the record — one restore at a time per sale, shared by every
   * request that meets it — and the request is answered 503 (RoomMissingError); the next finds it.
   * With the record down the room stays out, and every purchase of the sale is a 503: fail closed.
   */
  async lost(saleId: string): Promise<never> {
    let restoring = this.restoring.get(saleId);
    if (!restoring) {
      restoring = this.restore(saleId)
        .catch(() => undefined) // the record is down: the next request that meets it tries again
        .finally(() => this.restoring.delete(saleId));
      this.restoring.set(saleId, restoring);
    }
    await restoring;
    throw new RoomMissingError(saleId);
  }

  /** For a purchase's errors: a room Redis lost (RoomMissingError) is put back first (`lost`). */
  async rethrow(error: unknown): Promise<never> {
    if (error instanceof RoomMissingError) return this.lost(error.saleId);
    throw error;
  }

  /**
   * The operator's switch: a paused room admits nobody (its queue keeps its order; admissions made
   * stay valid), a resumed one admits at its pace again, saving up no burst from the pause. Kept in
   * the record, then put into Redis with the rest of the room. False: the sale has no room.
   */
  async setPaused(saleId: string, paused: boolean): Promise<boolean> {
    if (!isRecordId(saleId)) return false;
    const { rows } = await this.db.query(queries.setPaused, [saleId, paused]);
    if (rows.length === 0) return false;
    await this.restore(saleId);
    return true;
  }
}

function roomOfConfig(config: Record<string, string>): Room {
  return {
    openAt: Number(config.openAt),
    ratePerSec: Number(config.rate),
    powBits: Number(config.powBits ?? 0),
    ticketSeconds: Number(config.ticketMs) / 1000,
    admissionSeconds: (Number(config.admitMs) - Number(config.noticeMs ?? 0)) / 1000,
    shuffleSeconds: Number(config.shuffleMs) / 1000,
    noticeSeconds: Number(config.noticeMs ?? 0) / 1000,
    maxActive: Number(config.maxActive ?? 0),
    maxBacklog: Number(config.maxBacklog ?? 0),
  };
}
