import { SaleInputError } from '../errors.js';
import type { NewSale, RoomSettings } from '../types.js';

// The settings' type is in types.ts (with Sale, which carries them), so types.ts imports no folder.
export type { RoomSettings };

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

/**
 * A new sale's room, checked (undefined: none). A raffle has no room. A split sale's room cannot be
 * paced by the pipeline's backlog (`maxBacklog`): its orders go to its parts' streams, on other
 * Cluster slots than the room's scripts can read, so the setting would do nothing; it is refused.
 */
export function validateSaleRoom(input: NewSale, shards: number): RoomSettings | undefined {
  if (input.room === undefined) return undefined;
  const room = validateRoomSettings(input.room);
  if (input.admission === 'raffle') {
    throw new SaleInputError('a raffle sale has no waiting room: its entries are drawn, not raced for');
  }
  if (shards > 1 && room.maxBacklog > 0) {
    throw new SaleInputError(
      "room.maxBacklog cannot pace a split sale (shards > 1): its orders go to its parts' streams, which the room does not watch; leave it 0 or sell in one part",
    );
  }
  return room;
}
