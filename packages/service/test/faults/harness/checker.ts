import type { BuyCompletion, HistoryEvent } from './history.js';

/** The sale as created. */
export interface SaleFacts {
  stock: number;
  perUserLimit: number;
}

export interface RecordedOrder {
  id: string;
  userId: string;
  quantity: number;
  status: string;
}

/** What Redis and the record hold once the run is over and the pipeline has drained. */
export interface FinalState {
  orders: RecordedOrder[];
  /** sales.sold */
  recordedSold: number;
  /** Units Redis still offers (null: the sale is not in Redis). */
  redisRemaining: number | null;
  pending: number;
  undelivered: number;
  deadLetters: number;
  /** Whether the pipeline drained within its bound. */
  drained: boolean;
  /** Crashes and unexpected exits of the service's processes. */
  processProblems: string[];
}

/** Statuses of orders that hold no stock (the lifecycle may add more than `rejected`). */
const RELEASED = new Set(['rejected', 'cancelled', 'expired']);

/** Every check, in the order reports show them. */
export const CHECKS = {
  lostAcknowledged: 'a 202 order that the record does not hold',
  acknowledgedThenRejected: 'a 202 order that the record rejected',
  toldTwice: 'one Idempotency-Key told two different orders, or one order told to two keys',
  oversold: 'units held (or promised with 202s) beyond the stock',
  overLimit: "a user holding (or promised) more than the sale's per-user limit",
  unsold: 'units neither held in the record nor offered by Redis',
  refusedButRecorded: 'an order recorded for a buyer who was only ever told no',
  recordConsistent: 'sales.sold equals the units of the orders that hold stock',
  internalErrors: 'a 500 (a dependency failure must be a 503)',
  drained: 'the pipeline recorded everything (nothing pending, undelivered or dead-lettered)',
  crashes: 'every process ran until the harness stopped it; no unhandled error in any output',
  recovery: 'the sale answering again (202 or sold out) within the bound after the fault ended',
} as const;

export type CheckName = keyof typeof CHECKS;

export interface CheckResult {
  name: CheckName;
  valid: boolean;
  /** How many violations (units, orders, keys, processes...); 0 when valid. */
  count: number;
  /** A few of them, for the report. */
  examples: string[];
}

export interface RecoveryRule {
  /** Only answers from this server count (a restarted serve); any server when undefined. */
  server?: string;
  /** The sale must answer within this after the fault's end, ms. */
  boundMs: number;
}

export interface RowStats {
  /** Purchase intents (Idempotency-Keys) and requests. */
  intents: number;
  requests: number;
  /** Distinct orders acknowledged with a 202. */
  acknowledged: number;
  /** Definite refusals by code (sold_out, limit_reached, refused connections...). */
  refused: Record<string, number>;
  /** Requests with an unknown outcome: timeouts, resets, 5xx. */
  unknown: number;
  /** 503 answers among them. */
  unavailable: number;
  /** Intents that never got a definite answer before the buyer's deadline. */
  unresolved: number;
  /** Orders recorded from requests whose client only saw an unknown outcome (then gave up). */
  unknownThatBought: number;
  /** 202 answers while the fault lasted. */
  acknowledgedDuringFault: number;
  /** From the fault's end to the first answer of the sale; null when none came. */
  recoveryMs: number | null;
  faultMs: number | null;
  heldUnits: number;
  rejectedOrders: number;
}

export interface RowReport {
  valid: boolean;
  checks: CheckResult[];
  stats: RowStats;
}

const result = (name: CheckName, violations: string[], count = violations.length): CheckResult => ({
  name,
  valid: count === 0,
  count,
  examples: violations.slice(0, 5),
});

/**
 * Compares what clients were told (the history) with what was recorded (the final state). Pure: the
 * same inputs give the same report, so histories can be checked again offline and the checker is
 * tested with hand-written histories (checker.test.ts).
 */
export function checkRow(
  events: readonly HistoryEvent[],
  sale: SaleFacts,
  final: FinalState,
  recovery: RecoveryRule,
): RowReport {
  const completions = events.filter(
    (e): e is BuyCompletion & { t: number } => e.type !== 'invoke' && e.type !== 'fault',
  );
  const invokes = events.filter((e) => e.type === 'invoke');

  // What clients were told.
  const ordersByKey = new Map<string, Set<string>>();
  const keysByOrder = new Map<string, Set<string>>();
  const userOfKey = new Map<string, string>();
  const keysWithUnknown = new Set<string>();
  const refused: Record<string, number> = {};
  let unknown = 0;
  let unavailable = 0;
  const internal: string[] = [];
  for (const c of completions) {
    userOfKey.set(c.key, c.user);
    if (c.type === 'ok' && c.orderId) {
      add(ordersByKey, c.key, c.orderId);
      add(keysByOrder, c.orderId, c.key);
    } else if (c.type === 'fail') {
      const code = c.error ?? String(c.status);
      refused[code] = (refused[code] ?? 0) + 1;
    } else {
      unknown++;
      keysWithUnknown.add(c.key);
      if (c.status === 503) unavailable++;
      if (c.status !== undefined && c.status >= 500 && c.status !== 503) {
        internal.push(`${c.key} attempt ${c.attempt} on ${c.server}: ${c.status} ${c.error ?? ''}`);
      }
    }
  }
  const acknowledged = new Map<string, string>(); // order id → user
  for (const [orderId, keys] of keysByOrder)
    acknowledged.set(orderId, userOfKey.get([...keys][0] as string) ?? '');
  const definiteKeys = new Set(
    completions
      .filter((c) => c.type === 'ok' || (c.status !== undefined && c.status < 500))
      .map((c) => c.key),
  );
  const intents = new Set(invokes.map((e) => (e as { key: string }).key));

  // What was recorded.
  const recorded = new Map(final.orders.map((o) => [o.id, o]));
  const holding = final.orders.filter((o) => !RELEASED.has(o.status));
  const heldUnits = sum(holding.map((o) => o.quantity));

  const lost = [...acknowledged.keys()].filter((id) => !recorded.has(id));
  const rejected = [...acknowledged.keys()].filter((id) => {
    const status = recorded.get(id)?.status;
    return status !== undefined && RELEASED.has(status);
  });

  const toldTwice = [
    ...[...ordersByKey]
      .filter(([, ids]) => ids.size > 1)
      .map(([key, ids]) => `key ${key}: ${[...ids].join(', ')}`),
    ...[...keysByOrder]
      .filter(([, keys]) => keys.size > 1)
      .map(([id, keys]) => `order ${id}: ${[...keys].join(', ')}`),
  ];

  // Oversold: held beyond the stock, or 202s promised beyond it.
  const quantityOf = (id: string) => recorded.get(id)?.quantity ?? 1;
  const promisedUnits = sum([...acknowledged.keys()].map(quantityOf));
  const oversoldUnits = Math.max(0, heldUnits - sale.stock, promisedUnits - sale.stock);

  // Over the per-user limit: in the record, or in what users were told.
  const heldByUser = new Map<string, number>();
  for (const o of holding) heldByUser.set(o.userId, (heldByUser.get(o.userId) ?? 0) + o.quantity);
  const promisedByUser = new Map<string, number>();
  for (const [id, user] of acknowledged)
    promisedByUser.set(user, (promisedByUser.get(user) ?? 0) + quantityOf(id));
  const overLimit = [
    ...[...heldByUser].filter(([, n]) => n > sale.perUserLimit).map(([u, n]) => `${u} holds ${n}`),
    ...[...promisedByUser].filter(([, n]) => n > sale.perUserLimit).map(([u, n]) => `${u} was told ${n}`),
  ];

  // Units that left Redis without reaching a holder (and the other way round, as oversold).
  const remaining = final.redisRemaining ?? 0;
  const unsoldUnits = Math.max(0, sale.stock - heldUnits - remaining);

  // Recorded orders nobody was told about: fine if the buyer had an unknown outcome on some key
  // that never got a 202 (that request did buy); a violation if the buyer was only ever told no.
  const unresolvedKeysOf = new Map<string, string[]>();
  for (const key of keysWithUnknown) {
    if (ordersByKey.has(key)) continue;
    const user = userOfKey.get(key) ?? '';
    unresolvedKeysOf.set(user, [...(unresolvedKeysOf.get(user) ?? []), key]);
  }
  const unacknowledgedHeld = holding.filter((o) => !acknowledged.has(o.id));
  const refusedButRecorded = unacknowledgedHeld
    .filter((o) => !unresolvedKeysOf.has(o.userId))
    .map((o) => `order ${o.id} of ${o.userId}`);

  const recordMismatch =
    final.recordedSold === heldUnits ? [] : [`sales.sold ${final.recordedSold}, orders hold ${heldUnits}`];

  const undrained = [
    ...(final.drained ? [] : ['the pipeline did not drain in time']),
    ...(final.pending > 0 ? [`${final.pending} pending`] : []),
    ...(final.undelivered !== 0 ? [`${final.undelivered} undelivered`] : []),
    ...(final.deadLetters > 0 ? [`${final.deadLetters} dead-lettered`] : []),
  ];

  // Recovery: the first answer of the sale (202, or a business refusal: sold out, limit) to a
  // request sent after the fault ended.
  const faultStart = events.find((e) => e.type === 'fault' && e.phase === 'start')?.t;
  const faultEnd = events.find((e) => e.type === 'fault' && e.phase === 'end')?.t;
  let recoveryMs: number | null = null;
  if (faultEnd !== undefined) {
    const invokedAt = new Map<string, number>();
    for (const e of invokes)
      invokedAt.set(`${(e as { key: string }).key}#${(e as { attempt: number }).attempt}`, e.t);
    const answered = completions.find(
      (c) =>
        (c.type === 'ok' || c.status === 409) &&
        (recovery.server === undefined || c.server === recovery.server) &&
        (invokedAt.get(`${c.key}#${c.attempt}`) ?? -1) >= faultEnd,
    );
    recoveryMs = answered ? Math.round(answered.t - faultEnd) : null;
  }
  const recoveryViolations =
    faultEnd === undefined
      ? []
      : recoveryMs === null
        ? ['the sale never answered after the fault ended']
        : recoveryMs > recovery.boundMs
          ? [`answered ${recoveryMs} ms after the fault ended (bound ${recovery.boundMs} ms)`]
          : [];

  const checks = [
    result(
      'lostAcknowledged',
      lost.map((id) => `order ${id} of ${acknowledged.get(id)}`),
    ),
    result(
      'acknowledgedThenRejected',
      rejected.map((id) => `order ${id}: ${recorded.get(id)?.status}`),
    ),
    result('toldTwice', toldTwice),
    result(
      'oversold',
      oversoldUnits > 0 ? [`held ${heldUnits}, told ${promisedUnits}, stock ${sale.stock}`] : [],
      oversoldUnits,
    ),
    result('overLimit', overLimit),
    result(
      'unsold',
      unsoldUnits > 0 ? [`stock ${sale.stock}, held ${heldUnits}, Redis offers ${remaining}`] : [],
      unsoldUnits,
    ),
    result('refusedButRecorded', refusedButRecorded),
    result('recordConsistent', recordMismatch),
    result('internalErrors', internal),
    result('drained', undrained),
    result('crashes', final.processProblems),
    result('recovery', recoveryViolations),
  ];
  return {
    valid: checks.every((c) => c.valid),
    checks,
    stats: {
      intents: intents.size,
      requests: invokes.length,
      acknowledged: acknowledged.size,
      refused,
      unknown,
      unavailable,
      unresolved: [...intents].filter((key) => !definiteKeys.has(key)).length,
      unknownThatBought: unacknowledgedHeld.length - refusedButRecorded.length,
      acknowledgedDuringFault: completions.filter(
        (c) =>
          c.type === 'ok' &&
          faultStart !== undefined &&
          c.t >= faultStart &&
          (faultEnd === undefined || c.t <= faultEnd),
      ).length,
      recoveryMs,
      faultMs: faultStart !== undefined && faultEnd !== undefined ? Math.round(faultEnd - faultStart) : null,
      heldUnits,
      rejectedOrders: final.orders.length - holding.length,
    },
  };
}

function add(map: Map<string, Set<string>>, key: string, value: string): void {
  const set = map.get(key) ?? new Set<string>();
  set.add(value);
  map.set(key, set);
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
