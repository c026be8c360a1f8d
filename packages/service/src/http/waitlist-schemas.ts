import { Type } from '@fastify/type-provider-typebox';

/** Schemas of a first-come sale's waitlist (routes/waitlist.ts, sale/waitlist/). */

export const WaitlistStandingView = Type.Union(
  [
    Type.Object(
      {
        state: Type.Literal('waiting'),
        position: Type.Integer({
          minimum: 1,
          description: '1: the next unit that comes back is offered to you',
        }),
        waiting: Type.Integer({ minimum: 1, description: 'buyers in line, you included' }),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        state: Type.Literal('offered'),
        offerExpiresAt: Type.String({
          format: 'date-time',
          description: 'buy before this (POST /api/sales/{id}/waitlist/orders), or the unit passes on',
        }),
      },
      { additionalProperties: false },
    ),
    Type.Object({ state: Type.Literal('none') }, { additionalProperties: false }),
  ],
  { description: 'where the caller stands in the sale’s waitlist' },
);

export const WaitlistLeftView = Type.Object(
  {
    result: Type.Union([Type.Literal('left'), Type.Literal('declined'), Type.Literal('absent')], {
      description: 'left the line; declined an offer (it passed to the next in line); was in neither',
    }),
  },
  { additionalProperties: false },
);

export const OfferHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9_-]{1,64}$',
      description: 'the same key from the same user returns the same order',
    }),
  ),
});
