import { SaleInputError } from '../errors.js';

/** A sale's waiting room, as the operator sets it when creating the sale. */
export interface RoomSettings {
  /** Buyers admitted per second, in total over every serve process (fractions allowed: 0.5). */
  readonly ratePerSec: number;
  /**
   * Proof of work before a ticket: leading zero bits of SHA-256 the buyer must find (0: none). Each
   * bit doubles the expected work; README "Waiting room" has what a browser pays per difficulty.
   */
  readonly powBits: number;
  /** How long a queue ticket is valid, s. */
  readonly ticketSeconds: number;
  /** How long an admission lets its buyer buy, s (then they join again, at the back). */
  readonly admissionSeconds: number;
  /**
   * An admission is valid from this many seconds after it is made (and for `admissionSeconds` then).
   * Buyers are told to ask at least this often, so everyone admitted learns of it before it may be
   * used: a bot asking ten times as often gains nothing, and purchases follow admission order.
   */
  readonly noticeSeconds: number;
  /**
   * Arrivals within one window of this many seconds (and everyone before the sale starts) are
   * ordered at random, so a fast connection or a bot's head start gains nothing inside a window. The
   * first admission comes when the first window ends (this long after the sale starts).
   */
  readonly shuffleSeconds: number;
  /**
   * At most this many buyers admitted and not yet done (neither bought nor lapsed) at once, over every
   * serve process: the room's capacity, beside its pace (0: the pace alone). A purchase or a lapsed
   * admission frees its slot.
   */
  readonly maxActive: number;
  /**
   * Admissions pause while the order pipeline has more than this many of the sale's reservations not
   * yet recorded (its consumer group's lag plus pending), and go on when it catches up: the pace fed by
   * what the pipeline can take (0: off). A split sale's streams are on its parts: not paced so.
   */
  readonly maxBacklog: number;
}

export const ROOM_DEFAULTS = {
  powBits: 0,
  ticketSeconds: 3600,
  admissionSeconds: 300,
  shuffleSeconds: 10,
  noticeSeconds: 2,
  maxActive: 0,
  maxBacklog: 0,
} as const;

export const MAX_ROOM_RATE = 100_000;
export const MAX_POW_BITS = 32;
export const MAX_ACTIVE = 1_000_000;
const MAX_SECONDS = 7 * 24 * 60 * 60;

/** Checks a room's settings and fills in the defaults (the HTTP schema checks the same bounds). */
export function validateRoomSettings(input: Partial<RoomSettings>): RoomSettings {
  const { ratePerSec } = input;
  if (typeof ratePerSec !== 'number' || !(ratePerSec > 0) || ratePerSec > MAX_ROOM_RATE) {
    throw new SaleInputError(`room.ratePerSec must be a number above 0 and at most ${MAX_ROOM_RATE}`);
  }
  const settings = { ...ROOM_DEFAULTS, ...input, ratePerSec } as RoomSettings;
  if (!Number.isInteger(settings.powBits) || settings.powBits < 0 || settings.powBits > MAX_POW_BITS) {
    throw new SaleInputError(`room.powBits must be an integer from 0 to ${MAX_POW_BITS}`);
  }
  if (
    !Number.isInteger(settings.noticeSeconds) ||
    settings.noticeSeconds < 0 ||
    settings.noticeSeconds > 60
  ) {
    throw new SaleInputError('room.noticeSeconds must be an integer from 0 to 60');
  }
  if (!Number.isInteger(settings.maxActive) || settings.maxActive < 0 || settings.maxActive > MAX_ACTIVE) {
    throw new SaleInputError(`room.maxActive must be an integer from 0 (no cap) to ${MAX_ACTIVE}`);
  }
  if (!Number.isInteger(settings.maxBacklog) || settings.maxBacklog < 0 || settings.maxBacklog > MAX_ACTIVE) {
    throw new SaleInputError(`room.maxBacklog must be an integer from 0 (off) to ${MAX_ACTIVE}`);
  }
  for (const name of ['ticketSeconds', 'admissionSeconds', 'shuffleSeconds'] as const) {
    const value = settings[name];
    if (!Number.isInteger(value) || value < 1 || value > MAX_SECONDS) {
      throw new SaleInputError(`room.${name} must be an integer from 1 to ${MAX_SECONDS}`);
    }
  }
  return {
    ratePerSec: settings.ratePerSec,
    powBits: settings.powBits,
    ticketSeconds: settings.ticketSeconds,
    admissionSeconds: settings.admissionSeconds,
    shuffleSeconds: settings.shuffleSeconds,
    noticeSeconds: settings.noticeSeconds,
    maxActive: settings.maxActive,
    maxBacklog: settings.maxBacklog,
  };
}
