import { Type, type Static, type TSchema } from 'typebox';
import type { AttemptOutcome } from '../../sale/outcomes.js';

/**
 * The dashboard's JSON (TypeBox): the HTTP routes validate and serialize with these schemas, and the
 * browser code imports their static types (types only: this module must stay free of Node imports).
 */

/** One value per purchase outcome; the `satisfies` makes the compiler insist on every outcome. */
const perOutcome = <T extends TSchema>(value: () => T) =>
  Type.Object({
    reserved: value(),
    duplicate: value(),
    sold_out: value(),
    limit_reached: value(),
    not_started: value(),
    ended: value(),
    idempotency_key_reused: value(),
  } satisfies Record<AttemptOutcome, T>);

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const LiveSale = Type.Object({
  id: Type.String(),
  name: Type.String(),
  stock: Type.Integer(),
  perUserLimit: Type.Integer(),
  startsAt: Type.String({ format: 'date-time' }),
  endsAt: Type.String({ format: 'date-time' }),
  status: Type.Union([
    Type.Literal('scheduled'),
    Type.Literal('active'),
    Type.Literal('sold_out'),
    Type.Literal('ended'),
  ]),
  remaining: Nullable(Type.Integer({ description: 'units Redis still offers; null: not in Redis' })),
  sold: Type.Integer({
    description:
      'units held now: stock - remaining (reserved and not given back; units of cancelled or expired ' +
      'orders are on sale again). Not attempts.reserved, which counts orders, including those given back',
  }),
  attempts: perOutcome(() => Type.Integer({ minimum: 0 })),
  rates: perOutcome(() => Type.Number({ minimum: 0, description: 'attempts per second, recent' })),
  visitors: Type.Integer({ description: 'distinct users or addresses that looked or tried (estimate)' }),
  buyers: Type.Integer({ description: 'users holding at least one recorded unit' }),
  conversion: Nullable(Type.Number({ description: 'buyers / visitors' })),
  recorded: Type.Object({
    confirmedOrders: Type.Integer({ description: 'orders holding units (confirmed or paid)' }),
    confirmedUnits: Type.Integer(),
    rejectedOrders: Type.Integer(),
    cancelledUnits: Type.Integer({ description: 'units of cancelled orders: back on sale' }),
    expiredUnits: Type.Integer({ description: 'units of orders not paid in time: back on sale' }),
  }),
  raffle: Type.Optional(
    Type.Object(
      {
        phase: Type.Union([Type.Literal('entries'), Type.Literal('drawing'), Type.Literal('drawn')]),
        entries: Type.Integer(),
        winners: Type.Integer({ description: 'entrants given a unit (recorded orders)' }),
        paid: Type.Integer(),
        waitlist: Type.Integer({ description: 'entrants still in line for a unit that comes back' }),
      },
      { description: 'a raffle sale (admission raffle): its phase and counts' },
    ),
  ),
  room: Type.Optional(
    Type.Object(
      {
        ratePerSec: Type.Number({ description: 'admissions per second, in total' }),
        waiting: Type.Integer({ description: 'buyers in the queue now' }),
        admitted: Type.Integer({ description: 'buyers admitted so far' }),
        joined: Type.Integer({ description: 'buyers who took a place so far' }),
        powBits: Type.Integer({ description: 'proof-of-work difficulty before a ticket (0: none)' }),
      },
      { description: 'a sale with a waiting room: its queue and pace' },
    ),
  ),
  pipeline: Type.Object({
    pending: Type.Integer({ description: 'delivered to a consumer, not acknowledged' }),
    undelivered: Type.Integer({ description: 'not read by any consumer yet' }),
    lagMs: Nullable(Type.Integer({ description: 'age of the oldest unacknowledged reservation' })),
    deadLetters: Type.Integer(),
  }),
  parts: Type.Array(
    Type.Object({
      part: Type.Integer(),
      remaining: Nullable(Type.Integer({ description: 'units the part offers; null: not in Redis' })),
      backlog: Type.Integer({ description: 'entries of the part not recorded yet' }),
      lagMs: Nullable(Type.Integer()),
    }),
    { description: "a split sale's parts (empty: the sale is one part)" },
  ),
});
export type LiveSale = Static<typeof LiveSale>;

/** What the charts plot per sale and tick. */
export const SalePoint = Type.Object({
  remaining: Nullable(Type.Integer()),
  rates: perOutcome(() => Type.Number()),
  recordedUnits: Type.Integer(),
  returnedUnits: Type.Integer({ description: 'units of cancelled and expired orders (recorded)' }),
  pending: Type.Integer(),
  lagMs: Nullable(Type.Integer()),
});
export type SalePoint = Static<typeof SalePoint>;

export const DashboardPoint = Type.Object({
  t: Type.Integer({ description: 'ms since the epoch' }),
  sales: Type.Record(Type.String(), SalePoint),
});
export type DashboardPoint = Static<typeof DashboardPoint>;

export const DashboardSnapshot = Type.Object({
  at: Type.String({ format: 'date-time' }),
  tickMs: Type.Integer(),
  sales: Type.Array(LiveSale),
  history: Type.Optional(
    Type.Array(DashboardPoint, {
      description: 'with ?history=1: the last 10 minutes, one point a second, shared by every process',
    }),
  ),
});
export type DashboardSnapshot = Static<typeof DashboardSnapshot>;

export const DashboardQuery = Type.Object(
  { history: Type.Optional(Type.Union([Type.Literal('1'), Type.Literal('true')])) },
  { additionalProperties: false },
);

/** Server-Sent Events of GET /api/live (`event: <name>`, `data: <JSON>`). */
export interface LiveEvents {
  /** Sent once on connect: the last 10 minutes, one point a second, from the history every process shares. */
  history: { points: DashboardPoint[] };
  /** Every tick. */
  tick: { snapshot: DashboardSnapshot; point: DashboardPoint };
  /** A tick that could not read Redis or the database. */
  unavailable: { error: string; message: string };
}

export const ReconcileBody = Type.Object(
  {
    repair: Type.Optional(
      Type.Boolean({ default: false, description: 'set Redis to what the record allows' }),
    ),
  },
  { additionalProperties: false },
);

export const ReconcileReport = Type.Object({
  repaired: Type.Boolean(),
  sales: Type.Array(
    Type.Object({
      saleId: Type.String(),
      stock: Type.Integer(),
      redisRemaining: Nullable(Type.Integer()),
      heldOffers: Type.Integer({ description: 'units held apart as offers to waitlisted buyers' }),
      recordedUnits: Type.Integer(),
      inFlightUnits: Type.Integer(),
      drift: Type.Integer({
        description: 'stock - remaining - held offers - recorded - in flight; 0 when in sync',
      }),
      buyersBelowRecord: Type.Integer(),
      unscheduledOrders: Type.Integer({ description: 'unpaid orders Redis would never expire' }),
      condition: Type.Union(
        [Type.Literal('ok'), Type.Literal('missing'), Type.Literal('behind'), Type.Literal('recovering')],
        { description: 'Redis against the record: missing and behind sales are rebuilt from the record' },
      ),
      repairedRemaining: Type.Optional(Type.Integer()),
    }),
  ),
});
export type ReconcileReport = Static<typeof ReconcileReport>;

export const DemoToken = Type.Object({
  userId: Type.String(),
  token: Type.String(),
  expiresAt: Type.String({ format: 'date-time' }),
});
export type DemoToken = Static<typeof DemoToken>;
