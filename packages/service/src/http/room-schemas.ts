import { Type } from '@fastify/type-provider-typebox';
import { MAX_ACTIVE, MAX_POW_BITS, MAX_ROOM_RATE } from '../sale/room/settings.js';

/** Schemas of the waiting room (routes/room.ts; the sale's `room` option in schemas.ts). */

const WEEK = 7 * 24 * 60 * 60;

export const RoomSettingsBody = Type.Object(
  {
    ratePerSec: Type.Number({
      exclusiveMinimum: 0,
      maximum: MAX_ROOM_RATE,
      description: 'buyers admitted per second, in total over every serve process',
    }),
    powBits: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_POW_BITS,
        description: 'proof of work before a ticket: leading zero bits of SHA-256 (0: none; default 0)',
      }),
    ),
    ticketSeconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: WEEK,
        description: 'how long a queue ticket is valid (default 3600)',
      }),
    ),
    admissionSeconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: WEEK,
        description: 'how long an admission lets its buyer buy (default 300)',
      }),
    ),
    noticeSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 60,
        description:
          'an admission is valid from this long after it is made; buyers are told to ask this often, so asking more often gains nothing (default 2)',
      }),
    ),
    shuffleSeconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: WEEK,
        description:
          'arrivals within one window of this length, and all before the start, are admitted in random order (default 10)',
      }),
    ),
    maxActive: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_ACTIVE,
        description:
          'at most this many buyers admitted and not yet done (neither bought nor lapsed) at once, over every process (0: no cap; default 0)',
      }),
    ),
    maxBacklog: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_ACTIVE,
        description:
          'admissions pause while the order pipeline has more than this many of the sale’s reservations not yet recorded (0: off; default 0). Refused on a split sale (`shards` > 1): its orders go to its parts’ streams, which the room does not watch',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'a waiting room: buyers take a queue ticket and are admitted at a paced rate before they may buy',
  },
);

/** The room's settings as a sale shows them (every field filled in). */
export const RoomSettingsView = Type.Object({
  ratePerSec: Type.Number(),
  powBits: Type.Integer(),
  ticketSeconds: Type.Integer(),
  admissionSeconds: Type.Integer(),
  shuffleSeconds: Type.Integer(),
  noticeSeconds: Type.Integer(),
  maxActive: Type.Integer(),
  maxBacklog: Type.Integer(),
});

export const JoinBody = Type.Object(
  {
    challenge: Type.Optional(Type.String({ maxLength: 2048, description: 'from POST …/room/challenges' })),
    solution: Type.Optional(
      Type.String({
        pattern: '^[0-9a-zA-Z_-]{1,64}$',
        description: 'SHA-256(`<challenge>:<solution>`) starts with the challenge’s bits of zeros',
      }),
    ),
  },
  { additionalProperties: false },
);

export const CheckBody = Type.Object(
  { ticket: Type.String({ minLength: 1, maxLength: 2048, description: 'the queue ticket' }) },
  { additionalProperties: false },
);

export const ChallengeView = Type.Object({
  challenge: Type.String(),
  bits: Type.Integer({ description: 'leading zero bits the solution’s hash needs' }),
  expiresAt: Type.String({ format: 'date-time' }),
});

export const StandingView = Type.Object({
  state: Type.Union([Type.Literal('waiting'), Type.Literal('admitted')]),
  ticket: Type.String({ description: 'signed: buyer, sale, place; send it to …/room/check' }),
  ticketExpiresAt: Type.String({ format: 'date-time' }),
  position: Type.Optional(Type.Integer({ description: 'while waiting; 1: next' })),
  estimatedWaitSeconds: Type.Optional(Type.Integer({ description: 'while waiting: position / rate' })),
  checkWithinMs: Type.Optional(
    Type.Integer({
      description: 'while waiting: ask again within this long to learn of an admission in time',
    }),
  ),
  admission: Type.Optional(
    Type.String({ description: 'once admitted: send it with the purchase, header `Admission`' }),
  ),
  admittedAt: Type.Optional(Type.String({ format: 'date-time' })),
  admissionValidFrom: Type.Optional(
    Type.String({ format: 'date-time', description: 'buy from then on (the notice period after admission)' }),
  ),
  admissionExpiresAt: Type.Optional(Type.String({ format: 'date-time' })),
});

export const RoomStatsView = Type.Object({
  ratePerSec: Type.Number(),
  waiting: Type.Integer({ description: 'buyers in the queue now' }),
  admitted: Type.Integer({ description: 'buyers admitted so far' }),
  joined: Type.Integer({ description: 'buyers who took a place so far' }),
  powBits: Type.Integer(),
  active: Type.Integer({ description: 'buyers admitted and not yet done (neither bought nor lapsed)' }),
  maxActive: Type.Integer({ description: 'the cap on active buyers (0: none)' }),
  paused: Type.Boolean({ description: 'whether the room admits nobody for now (the operator paused it)' }),
});

/** The published key set admissions are signed with (RFC 7517; Ed25519 keys per RFC 8037). */
export const JwksView = Type.Object({
  keys: Type.Array(
    Type.Object({
      kty: Type.Literal('OKP'),
      crv: Type.Literal('Ed25519'),
      x: Type.String({ description: 'the public key, base64url' }),
      kid: Type.String({ description: 'its RFC 7638 thumbprint: the `kid` of the admissions it signs' }),
      use: Type.Literal('sig'),
      alg: Type.Literal('EdDSA'),
    }),
  ),
});
