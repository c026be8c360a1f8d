import { DEFAULT_KEY_PREFIX } from 'lockstock/redis';
import { saleKeys } from '../keys.js';

/**
 * Redis keys of a sale's waiting room, on the sale's hash tag `{sale:<id>}` (keys.ts): its scripts
 * touch one Cluster slot, the same as the sale's purchases.
 */
export interface RoomKeys {
  /**
   * hash: the room's settings {rate, openAt, shuffleMs, admitMs (notice included), noticeMs, powBits,
   * ticketMs, maxActive (0: no cap), maxBacklog (0: off), orderGroup, paused (1: admits nobody)};
   * written before the stock
   */
  readonly config: string;
  /** hash: the pace {credit, last} and counts {admitted, joined, firstJoin} */
  readonly state: string;
  /** sorted set: waiting buyers by score (window + random fraction); lowest admitted first */
  readonly queue: string;
  /** hash: buyer → when they were admitted (ms, Redis clock): the record of admissions */
  readonly admitted: string;
  /** hash: buyer → admitted-at of the admission they spent (one admission buys one order) */
  readonly spent: string;
  /** sorted set: buyers admitted and not yet done, scored by their admission's end (ms, Redis clock) */
  readonly active: string;
  /** the sale's orders stream (keys.ts): its consumer group's backlog can pace the room */
  readonly stream: string;
  /** string per proof-of-work challenge, set when it is spent (expires with the challenge) */
  spentChallenge(nonce: string): string;
}

export function roomKeys(saleId: string, prefix = DEFAULT_KEY_PREFIX): RoomKeys {
  const base = `${prefix}:{sale:${saleId}}:room`;
  return {
    config: base,
    state: `${base}:state`,
    queue: `${base}:queue`,
    admitted: `${base}:admitted`,
    spent: `${base}:spent`,
    active: `${base}:active`,
    stream: saleKeys(saleId, prefix).stream,
    spentChallenge: (nonce) => `${base}:pow:${nonce}`,
  };
}
