import { Type } from '@fastify/type-provider-typebox';
import { AWAITING_REASONS } from '../sale/raffle/draw.js';

/** Schemas of the raffle routes (routes/raffle.ts). */

export const RaffleView = Type.Object({
  saleId: Type.String(),
  phase: Type.Union([Type.Literal('entries'), Type.Literal('closed'), Type.Literal('drawn')], {
    description:
      'entries: taking entries until drawAt; closed: the list fixed, the draw waiting for its beacon round; drawn: winners served, then the waitlist',
  }),
  seedHash: Type.String({ description: 'hex SHA-256 of the seed, published at creation (the commitment)' }),
  seed: Type.Optional(Type.String({ description: 'the seed (hex), revealed once drawn' })),
  drawAt: Type.String({ format: 'date-time' }),
  drawnAt: Type.Optional(Type.String({ format: 'date-time' })),
  stock: Type.Integer(),
  entries: Type.Integer({ description: 'entries so far (accepted while open; as drawn afterwards)' }),
  winners: Type.Integer({ description: 'entrants given a unit (recorded orders)' }),
  paid: Type.Integer(),
  waitlist: Type.Integer({ description: 'entrants still in line for a unit that comes back' }),
});

/** What fixes the draw, as a receipt carries it (sale/raffle/signing.ts). */
export const RaffleCommitment = Type.Object({
  saleId: Type.String(),
  seedHash: Type.String({ description: 'hex SHA-256 of the secret seed' }),
  closesAt: Type.String({ format: 'date-time', description: 'entries close then at the latest' }),
  beacon: Type.Union(
    [
      Type.Object({
        chainHash: Type.String({ description: 'drand chain hash (hex)' }),
        publicKey: Type.String({ description: 'the chain public key: compressed G2 point, hex' }),
        genesisTime: Type.Integer({ description: 'Unix seconds of round 1' }),
        period: Type.Integer({ description: 'seconds between rounds' }),
        scheme: Type.Literal('bls-unchained-g1-rfc9380'),
      }),
      Type.Null(),
    ],
    {
      description:
        'the randomness beacon whose first round after the close is mixed into the draw; null: none (commit–reveal only)',
    },
  ),
});

/** A drand round (sale/raffle/beacon.ts). */
export const BeaconRound = Type.Object({
  round: Type.Integer(),
  signature: Type.String({ description: 'BLS signature of the round: compressed G1 point, hex' }),
});

/** A payload signed by the service (Ed25519 over its canonical JSON). */
const signed = <T extends ReturnType<typeof Type.Object>>(payload: T, description: string) =>
  Type.Object(
    {
      payload,
      kid: Type.Optional(
        Type.String({
          description: "the key's RFC 7638 thumbprint, base64url: its `kid` in GET /.well-known/jwks.json",
        }),
      ),
      keyId: Type.Optional(
        Type.String({
          description:
            'on documents signed before `kid` only: first 16 bytes of SHA-256 of the public key, hex',
        }),
      ),
      publicKey: Type.String({ description: 'Ed25519 public key, raw 32 bytes, base64url' }),
      signature: Type.String({ description: 'Ed25519 over the canonical JSON of payload, base64url' }),
    },
    { description },
  );

export const EntryReceipt = signed(
  Type.Object({
    kind: Type.Literal('lockstock.raffle.entry.v1'),
    entryHash: Type.String(),
    commitment: RaffleCommitment,
  }),
  'the signed receipt of the entry: keep it, `lockstock raffle verify --receipt` checks the draw with it',
);

export const CloseStatement = signed(
  Type.Object({
    kind: Type.Literal('lockstock.raffle.close.v1'),
    commitment: RaffleCommitment,
    entries: Type.Integer(),
    root: Type.String({
      description: 'hex Merkle root of the sorted entry hashes, 256 per leaf (RFC 6962 hashing)',
    }),
    closedAt: Type.String({ format: 'date-time' }),
    round: Type.Optional(
      Type.Integer({ description: 'the beacon round the draw waits for: the first after closedAt' }),
    ),
  }),
  'the entry list as the draw fixed it, signed at the close',
);

/** The service's one signing key (sale/store/signing-key.ts): the JWKS's, admissions' and receipts' key. */
export const SigningKey = Type.Object({
  algorithm: Type.Literal('Ed25519'),
  kid: Type.String({ description: 'RFC 7638 thumbprint, base64url: the `kid` of the JWKS entry' }),
  keyId: Type.String({ description: 'the old id (first 16 bytes of SHA-256 of the key, hex)' }),
  publicKey: Type.String({ description: 'raw 32 bytes, base64url' }),
});

export const PublishedRaffle = Type.Object({
  saleId: Type.String(),
  seedHash: Type.String(),
  seed: Type.Optional(Type.String()),
  commitment: Type.Optional(RaffleCommitment),
  close: Type.Optional(CloseStatement),
  beaconRound: Type.Optional(BeaconRound),
  key: Type.Optional(SigningKey),
  phase: Type.Union([Type.Literal('entries'), Type.Literal('closed'), Type.Literal('drawn')]),
  stock: Type.Integer(),
  entries: Type.Array(
    Type.Object({
      hash: Type.String({ description: 'hex SHA-256 of "<sale id>:<user id>"' }),
      position: Type.Optional(Type.Integer({ description: 'place in the draw order (1 = first)' })),
      won: Type.Boolean({ description: 'given a unit (a recorded order)' }),
    }),
  ),
});

export const EntryAccepted = Type.Object({
  entryHash: Type.String({ description: 'the id the entry is published under' }),
  status: Type.Literal('entered'),
  duplicate: Type.Boolean({ description: 'the buyer had entered before (nothing changed)' }),
  receipt: EntryReceipt,
});

export const EntryView = Type.Object({
  entryHash: Type.String(),
  status: Type.Union([
    Type.Literal('entered'),
    Type.Literal('won'),
    Type.Literal('waitlisted'),
    Type.Literal('not_drawn'),
  ]),
  position: Type.Optional(Type.Integer()),
  orderId: Type.Optional(Type.String({ description: 'the order of a winner: pay or cancel it' })),
  ahead: Type.Optional(Type.Integer({ description: 'entrants ahead in line (waitlisted)' })),
  receipt: Type.Optional(EntryReceipt),
});

export const DrawResult = Type.Object({
  result: Type.Union([Type.Literal('drawn'), Type.Literal('already')], {
    description: 'drawn: this call drew; already: the raffle had been drawn (by the runner or another call)',
  }),
  entries: Type.Optional(Type.Integer({ description: 'entries this call drew' })),
  round: Type.Optional(Type.Integer({ description: 'the beacon round the draw mixed in' })),
});

/** 202: the entries are closed and signed; the draw runs once its beacon round is had. */
export const DrawAwaiting = Type.Object(
  {
    result: Type.Literal('awaiting_beacon'),
    round: Type.Integer({ description: 'the drand round the draw waits for: the first after closesAt' }),
    roundAt: Type.String({
      format: 'date-time',
      description: "when the round is due by its chain's schedule (genesis + (round − 1) × period)",
    }),
    reason: Type.Enum(AWAITING_REASONS, {
      description:
        'round_not_out: the relay has no such round yet; no_beacon_source: this process has no relay of the chain (another serve may draw it)',
    }),
    message: Type.String({ description: 'the same, for humans' }),
  },
  {
    description:
      'the entries are closed and signed; the draw waits for its beacon round (the raffle runner draws it once out, or call again)',
  },
);
