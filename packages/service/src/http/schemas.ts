import { Type, type Static } from '@fastify/type-provider-typebox';
import { MAX_PAY_WITHIN_SECONDS, MAX_PER_USER_LIMIT, MAX_STOCK } from '../sale/new-sale.js';
import { MAX_SHARDS } from '../sale/shards/layout.js';
import { RoomSettingsBody, RoomSettingsView } from './room-schemas.js';

/** Request and response schemas (TypeBox): validation, serialization and OpenAPI from one source. */

export const ErrorBody = Type.Object(
  {
    error: Type.String({ description: 'stable error code, e.g. sold_out' }),
    message: Type.String({ description: 'a sentence for humans' }),
  },
  { $id: 'Error' },
);

export const SaleIdParams = Type.Object({
  // Canonical decimal only ("0001" is refused, not read as sale 1); 18 digits stay within a bigint.
  id: Type.String({ pattern: '^[1-9][0-9]{0,17}$', description: 'sale id (decimal, no leading zero)' }),
});

export const OrderIdParams = Type.Object({
  // Canonical decimal; beyond 2^63 − 1 (19 digits) there is no such order (SaleService.getOrder).
  id: Type.String({
    pattern: '^[1-9][0-9]{0,18}$',
    description: 'order id (64-bit, decimal, no leading zero)',
  }),
});

export const NewSaleBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    stock: Type.Integer({ minimum: 0, maximum: MAX_STOCK }),
    startsAt: Type.Optional(Type.String({ format: 'date-time', description: 'default: now' })),
    endsAt: Type.Optional(Type.String({ format: 'date-time', description: 'default: startsAt + 1 day' })),
    perUserLimit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PER_USER_LIMIT, default: 1 })),
    admission: Type.Optional(
      Type.Union([Type.Literal('first_come'), Type.Literal('raffle')], {
        description:
          'raffle: buyers enter until drawAt, then a draw gives one unit per winner and the waitlist the units that come back (one shard only)',
      }),
    ),
    drawAt: Type.Optional(
      Type.String({
        format: 'date-time',
        description: "a raffle's end of entries and draw (default: midway)",
      }),
    ),
    payWithinSeconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_PAY_WITHIN_SECONDS,
        description: 'unpaid orders expire this long after the reservation (default: never)',
      }),
    ),
    shards: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_SHARDS,
        default: 1,
        description:
          'split the stock into this many parts, each on its own Redis Cluster master (one hot sale beyond one Redis core); units move between parts, and sold out is answered only when every part is',
      }),
    ),
    room: Type.Optional(RoomSettingsBody),
  },
  { additionalProperties: false },
);
export type NewSaleBody = Static<typeof NewSaleBody>;

export const SaleView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  stock: Type.Integer(),
  remaining: Type.Integer(),
  sold: Type.Integer(),
  perUserLimit: Type.Integer(),
  admission: Type.Optional(Type.Literal('raffle', { description: 'a raffle sale (see its /raffle)' })),
  startsAt: Type.String({ format: 'date-time' }),
  endsAt: Type.String({ format: 'date-time' }),
  payWithinSeconds: Type.Optional(Type.Integer()),
  shards: Type.Integer({ description: 'parts the stock is split into (1: not split)' }),
  room: Type.Optional(RoomSettingsView),
  status: Type.Union([
    Type.Literal('scheduled'),
    Type.Literal('active'),
    Type.Literal('sold_out'),
    Type.Literal('ended'),
  ]),
});

export const SaleListQuery = Type.Object(
  {
    status: Type.Optional(
      Type.Union([
        Type.Literal('scheduled'),
        Type.Literal('active'),
        Type.Literal('sold_out'),
        Type.Literal('ended'),
      ]),
    ),
    limit: Type.Optional(
      Type.String({ pattern: '^(?:[1-9][0-9]?|100)$', description: '1 to 100; default 20' }),
    ),
    before: Type.Optional(
      Type.String({ pattern: '^[1-9][0-9]{0,17}$', description: 'the `next` of the previous page' }),
    ),
  },
  { additionalProperties: false },
);

export const SaleList = Type.Object({
  sales: Type.Array(SaleView),
  next: Type.Optional(
    Type.String({ description: 'pass as `before` for the next page; absent on the last one' }),
  ),
});

export const OrderBody = Type.Object(
  {
    quantity: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PER_USER_LIMIT, default: 1 })),
  },
  { additionalProperties: false },
);
export type OrderBody = Static<typeof OrderBody>;

export const OrderHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9_-]{1,64}$',
      description: 'the same key from the same user returns the same order',
    }),
  ),
  admission: Type.Optional(
    Type.String({
      maxLength: 2048,
      description: 'a sale with a waiting room: the admission from POST /api/sales/:id/room/check',
    }),
  ),
});

export const ReservedBody = Type.Object({
  orderId: Type.String(),
  status: Type.Literal('reserved'),
});

export const OrderView = Type.Object({
  orderId: Type.String(),
  saleId: Type.String(),
  userId: Type.String(),
  quantity: Type.Integer(),
  status: Type.Union([
    Type.Literal('reserved'),
    Type.Literal('confirmed'),
    Type.Literal('paid'),
    Type.Literal('cancelled'),
    Type.Literal('expired'),
    Type.Literal('rejected'),
  ]),
  reason: Type.Optional(Type.String({ description: 'why the record refused it (rejected only)' })),
  payBy: Type.Optional(
    Type.String({
      format: 'date-time',
      description: 'when it expires unless paid (sales with a payment window)',
    }),
  ),
});

export const errorResponses = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((status) => [status, Type.Ref('Error')]));
