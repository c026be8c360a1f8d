import { randomInt } from 'node:crypto';
import { loadLuaScript, type ScriptRunner } from 'lockstock/redis';
import type { SaleContext } from '../context/context.js';
import { roomKeys } from './keys.js';
import { checkProofOfWork, issueChallenge, type PowChallenge } from './pow.js';
import type { ServiceKey } from '../store/signing-key.js';
import { AdmissionKeys } from './admission-token.js';
import { RoomSigner } from './signed.js';
import type { Room, RoomStore } from './store.js';

const joinScript = loadLuaScript(new URL('./lua/join.lua', import.meta.url));
const checkScript = loadLuaScript(new URL('./lua/check.lua', import.meta.url));
const statsScript = loadLuaScript(new URL('./lua/stats.lua', import.meta.url));

/** Why the room refused a request (each maps to one HTTP status in http/errors.ts). */
export type RoomRefusalCode =
  | 'not_found'
  | 'no_room'
  | 'pow_required'
  | 'pow_invalid'
  | 'pow_expired'
  | 'ticket_invalid'
  | 'ticket_expired'
  | 'admission_required'
  | 'admission_invalid'
  | 'admission_expired'
  | 'admission_used';

export interface RoomRefusal {
  readonly ok: false;
  readonly code: RoomRefusalCode;
  readonly message: string;
}

/** Where a buyer stands: waiting (with the ticket to ask again) or admitted (with the pass to buy). */
export type RoomStanding =
  | {
      readonly ok: true;
      readonly state: 'waiting';
      readonly ticket: string;
      /** 1: next to be admitted */
      readonly position: number;
      readonly estimatedWaitSeconds: number;
      /** Ask again within this long (the notice period): one learns of one's admission in time. */
      readonly checkWithinMs: number;
      readonly ticketExpiresAt: number;
    }
  | {
      readonly ok: true;
      readonly state: 'admitted';
      readonly ticket: string;
      /** Sent with the purchase (header `Admission`), from `admissionValidFrom` on. */
      readonly admission: string;
      readonly admittedAt: number;
      readonly admissionValidFrom: number;
      readonly admissionExpiresAt: number;
      readonly ticketExpiresAt: number;
    };

export interface RoomStats {
  readonly ratePerSec: number;
  readonly waiting: number;
  readonly admitted: number;
  readonly joined: number;
  readonly powBits: number;
  /** Admitted and not yet done (neither bought nor lapsed). */
  readonly active: number;
  /** The cap on `active` (0: none). */
  readonly maxActive: number;
  readonly paused: boolean;
}

const refuse = (code: RoomRefusalCode, message: string): RoomRefusal => ({ ok: false, code, message });
const NO_ROOM = refuse('no_room', 'This sale has no waiting room: buy directly.');
const NO_SALE = refuse('not_found', 'There is no such sale.');

/**
 * A first-come sale's waiting room: a buyer takes a queue ticket (signed: buyer, sale, place,
 * expiry), asks with it where they stand, and once admitted gets an admission (signed: buyer, sale,
 * expiry) that the purchase route requires. The queue and the admissions live in Redis under the
 * sale's hash tag (lua/), paced on the Redis clock, so every serve process admits from one budget.
 */
export class WaitingRoom {
  private readonly scripts: ScriptRunner;
  private readonly signer: RoomSigner;
  /** Admissions are Ed25519 JWTs: other services check them with the published key set. */
  readonly admissions: AdmissionKeys;
  private readonly prefix: string;

  /**
   * `secret` signs what only this service reads back (queue tickets, proof-of-work challenges:
   * HMAC); `key` is the service's signing key from the record (loadServiceKey), which admissions
   * are signed with, so that every process on the record checks every other's.
   */
  constructor(
    context: SaleContext,
    readonly rooms: RoomStore,
    secret: string,
    key: ServiceKey,
  ) {
    this.scripts = context.scripts;
    this.signer = new RoomSigner(secret);
    this.admissions = new AdmissionKeys(key);
    this.prefix = context.prefix;
  }

  /** The signer of this room's tokens (proof-of-work challenges for the raffle, too). */
  get tokens(): RoomSigner {
    return this.signer;
  }

  private async room(saleId: string): Promise<Room | RoomRefusal> {
    const room = await this.rooms.roomOf(saleId);
    if (room === 'no_sale') return NO_SALE;
    return room === 'none' ? NO_ROOM : room;
  }

  /** A proof-of-work challenge for a buyer (refused for a room without proof of work). */
  async challenge(saleId: string, userId: string): Promise<(PowChallenge & { ok: true }) | RoomRefusal> {
    const room = await this.room(saleId);
    if ('ok' in room) return room;
    if (room.powBits === 0) return refuse('no_room', 'This sale’s waiting room asks for no proof of work.');
    return { ok: true, ...issueChallenge(this.signer, { saleId, userId, bits: room.powBits }) };
  }

  /** A buyer joins (or asks again: one place per buyer); with proof of work if the room asks it. */
  async join(
    saleId: string,
    userId: string,
    proof?: { challenge: string; solution: string },
  ): Promise<RoomStanding | RoomRefusal> {
    const room = await this.room(saleId);
    if ('ok' in room) return room;
    const keys = roomKeys(saleId, this.prefix);
    let spent = { key: keys.state, until: '' };
    if (room.powBits > 0) {
      if (!proof) {
        return refuse(
          'pow_required',
          'This sale asks for proof of work first: get a challenge and solve it.',
        );
      }
      const check = checkProofOfWork(this.signer, { saleId, userId, ...proof, minBits: room.powBits });
      if (!check.ok) return refuse(check.code, check.message);
      spent = { key: keys.spentChallenge(check.nonce), until: String(check.expiresAt) };
    }
    // A fraction from the CSPRNG: 2^48 steps, far finer than any queue.
    const fraction = (randomInt(2 ** 47) * 2 + randomInt(2)) / 2 ** 48;
    const reply = (await this.scripts.run(
      joinScript,
      [keys.config, keys.state, keys.queue, keys.admitted, keys.spent, keys.active, spent.key, keys.stream],
      [userId, fraction.toFixed(15), spent.until],
    )) as Array<number | string>;
    const status = Number(reply[0]);
    if (status === -1) return this.rooms.lost(saleId); // Redis lost the room `room` says it has
    if (status === -2) return refuse('pow_invalid', 'This proof-of-work challenge was used already.');
    // Admitted at once (or asking again once admitted): the ticket's place no longer matters.
    const admitted = status === 1;
    const ticketExpiresAt = Number(reply[admitted ? 2 : 3]) + room.ticketSeconds * 1000;
    const score = admitted ? '0' : String(reply[2]);
    const ticket = this.signer.sign('ticket', { s: saleId, u: userId, q: score, exp: ticketExpiresAt });
    return this.standing(
      saleId,
      userId,
      room,
      { ticket, ticketExpiresAt },
      {
        ...(admitted ? { admittedAt: Number(reply[1]) } : { position: Number(reply[1]) }),
      },
    );
  }

  /** Where the holder of `ticket` stands now (admits whoever the pace allows first). */
  async check(saleId: string, userId: string, ticket: string): Promise<RoomStanding | RoomRefusal> {
    const room = await this.room(saleId);
    if ('ok' in room) return room;
    const payload = this.signer.open('ticket', ticket);
    if (!payload || typeof payload.q !== 'string' || typeof payload.exp !== 'number') {
      return refuse('ticket_invalid', 'The queue ticket is not one this service issued.');
    }
    if (payload.s !== saleId || payload.u !== userId) {
      return refuse('ticket_invalid', 'The queue ticket belongs to another buyer or sale.');
    }
    if (payload.exp <= Date.now()) {
      return refuse('ticket_expired', 'The queue ticket has expired: join the room again.');
    }
    const keys = roomKeys(saleId, this.prefix);
    const reply = (await this.scripts.run(
      checkScript,
      [keys.config, keys.state, keys.queue, keys.admitted, keys.spent, keys.active, keys.stream],
      [userId, payload.q],
    )) as Array<number | string>;
    const status = Number(reply[0]);
    if (status === -1) return this.rooms.lost(saleId); // Redis lost the room `room` says it has
    if (status === 2) {
      return refuse('admission_expired', 'Your admission lapsed unused: join the room again.');
    }
    if (status === 3) {
      return refuse(
        'admission_used',
        'Your admission has bought its order (one admission, one order): join the room again to buy more.',
      );
    }
    const held = { ticket, ticketExpiresAt: payload.exp };
    return this.standing(saleId, userId, room, held, {
      ...(status === 1 ? { admittedAt: Number(reply[1]) } : { position: Number(reply[1]) }),
    });
  }

  private standing(
    saleId: string,
    userId: string,
    room: Room,
    { ticket, ticketExpiresAt }: { ticket: string; ticketExpiresAt: number },
    at: { position?: number; admittedAt?: number },
  ): RoomStanding {
    if (at.admittedAt !== undefined) {
      const admissionValidFrom = at.admittedAt + room.noticeSeconds * 1000;
      const admissionExpiresAt = admissionValidFrom + room.admissionSeconds * 1000;
      return {
        ok: true,
        state: 'admitted',
        ticket,
        // `at` names this admission in Redis: the reservation checks and spends it there, on the
        // Redis clock (nbf and exp are for the holder's information, and for other services).
        admission: this.admissions.sign({
          saleId,
          userId,
          at: at.admittedAt,
          validFrom: admissionValidFrom,
          expiresAt: admissionExpiresAt,
        }),
        admittedAt: at.admittedAt,
        admissionValidFrom,
        admissionExpiresAt,
        ticketExpiresAt,
      };
    }
    const position = at.position ?? 1;
    return {
      ok: true,
      state: 'waiting',
      ticket,
      position,
      estimatedWaitSeconds: Math.ceil(position / room.ratePerSec),
      checkWithinMs: Math.max(250, room.noticeSeconds * 1000),
      ticketExpiresAt,
    };
  }

  /**
   * The admission `userId` presents for `saleId`: its admitted-at when it is signed here for this
   * buyer and sale (one Ed25519 check, no round trip), else the refusal. Whether it is valid now, and unspent,
   * is the reservation's to decide, on the Redis clock (lua/admission.lua).
   */
  checkAdmission(
    saleId: string,
    userId: string,
    admission: string | undefined,
  ): { ok: true; admittedAt: number } | RoomRefusal {
    if (admission === undefined) {
      return refuse(
        'admission_required',
        'This sale has a waiting room: join it (POST /api/sales/:id/room/tickets) and buy once admitted, sending the admission in the Admission header.',
      );
    }
    const claims = this.admissions.open(admission, saleId, userId);
    if (!claims) return refuse('admission_invalid', 'The admission is not valid for this buyer and sale.');
    return { ok: true, admittedAt: claims.at };
  }

  /** The room's counts for the dashboard (undefined: no room). */
  async stats(saleId: string): Promise<RoomStats | undefined> {
    const keys = roomKeys(saleId, this.prefix);
    const reply = (await this.scripts.run(
      statsScript,
      [keys.config, keys.state, keys.queue, keys.admitted, keys.active],
      [],
    )) as Array<number | string>;
    if (reply.length === 0) return undefined;
    return {
      ratePerSec: Number(reply[0]),
      waiting: Number(reply[1]),
      admitted: Number(reply[2]),
      joined: Number(reply[3]),
      powBits: Number(reply[4]),
      active: Number(reply[5]),
      maxActive: Number(reply[6]),
      paused: reply[7] === '1',
    };
  }
}
