import { Type } from '@fastify/type-provider-typebox';

/** Schemas of the raffle routes (routes/raffle.ts). */

export const RaffleView = Type.Object({
  saleId: Type.String(),
  phase: Type.Union([Type.Literal('entries'), Type.Literal('drawn')], {
    description: 'entries: taking entries until drawAt; drawn: winners served, then the waitlist',
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

export const PublishedRaffle = Type.Object({
  saleId: Type.String(),
  seedHash: Type.String(),
  seed: Type.Optional(Type.String()),
  phase: Type.Union([Type.Literal('entries'), Type.Literal('drawn')]),
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
});

export const DrawResult = Type.Object({
  result: Type.Union([Type.Literal('drawn'), Type.Literal('already')]),
  entries: Type.Optional(Type.Integer({ description: 'entries this call drew' })),
});
