import type { BuyCompletion, HistoryEvent, OfferEvent } from './history.js';

/** The sale as the harness created it (never read back from the service's own record). */
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
  /** sales.stock and sales.per_user_limit: must be what the harness created. */
  recordedStock: number;
  recordedPerUserLimit: number;
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
/** Statuses of orders that gave their units back at a time the history does not tell. */
const GIVEN_BACK = new Set(['cancelled', 'expired']);

/** Every check, in the order reports show them. */
export const CHECKS = {
  lostAcknowledged: 'a 202 order that the record does not hold',
  acknowledgedThenRejected: 'a 202 order that the record rejected',
  toldTwice: 'one Idempotency-Key told two different orders, or one order told to two keys',
  oversold: 'units held (or promised with 202s the record has) beyond the stock',
  overLimit: "a user holding (or promised, with 202s the record has) more than the sale's per-user limit",
  overOffered:
    'Redis offering more units than the stock minus those of the orders told 202 before it (sampled through the run and at the end)',
  unsold: 'units neither held in the record nor offered by Redis',
  refusedButRecorded: 'an order recorded for a buyer who was only ever told no',
  recordConsistent:
    'sales.sold equals the units of the orders that hold stock; stock and limit are as the harness created them',
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
  offers: OfferStats;
}

export interface RowReport {
  valid: boolean;
  checks: CheckResult[];
  stats: RowStats;
}

/** The offer check's figures (see overOffered in checkRow). */
export interface OfferStats {
  /** Samples of Redis's offer taken, and how many were judged (outside the fault's window, with a key). */
  samples: number;
  judged: number;
  /** Judged samples taken after the fault ended (the final state is one more). */
  judgedAfterFault: number;
  /** The largest over-offer seen, units (0: none). */
  worstExcess: number;
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
    (e): e is BuyCompletion & { t: number } =>
      e.type !== 'invoke' && e.type !== 'fault' && e.type !== 'offer',
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

  // Oversold: held beyond the stock, or 202s promised beyond it. A promise counts if the record has
  // its order (held, or rejected: a unit the service promised twice); a 202 the record lost is
  // lostAcknowledged's, and its unit, lost with it, may be sold again (not counted twice).
  const quantityOf = (id: string) => recorded.get(id)?.quantity ?? 1;
  const promisedRecorded = [...acknowledged].filter(([id]) => recorded.has(id));
  const promisedUnits = sum(promisedRecorded.map(([id]) => quantityOf(id)));
  const oversoldUnits = Math.max(0, heldUnits - sale.stock, promisedUnits - sale.stock);

  // Over the per-user limit: in the record, or in what users were told (promises the record has).
  const heldByUser = new Map<string, number>();
  for (const o of holding) heldByUser.set(o.userId, (heldByUser.get(o.userId) ?? 0) + o.quantity);
  const promisedByUser = new Map<string, number>();
  for (const [id, user] of promisedRecorded)
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

  const recordMismatch = [
    ...(final.recordedSold === heldUnits
      ? []
      : [`sales.sold ${final.recordedSold}, orders hold ${heldUnits}`]),
    ...(final.recordedStock === sale.stock && final.recordedPerUserLimit === sale.perUserLimit
      ? []
      : [
          `the record has stock ${final.recordedStock} and limit ${final.recordedPerUserLimit}, ` +
            `the harness created ${sale.stock} and ${sale.perUserLimit}`,
        ]),
  ];

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

  const offers = checkOffers(events, sale, final, {
    acknowledged,
    recorded,
    quantityOf,
    heldUnits,
    invokes,
    faultStart,
    faultEnd,
  });

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
      oversoldUnits > 0
        ? [`held ${heldUnits}, told (in the record) ${promisedUnits}, stock ${sale.stock}`]
        : [],
      oversoldUnits,
    ),
    result('overLimit', overLimit),
    result('overOffered', offers.violations, offers.stats.worstExcess),
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
      offers: offers.stats,
    },
  };
}

/**
 * The offer check: Redis never offers more than the stock minus the units of orders it has taken.
 *
 * Precisely, for each sample of the sale's stock key on Redis sent at time s (OfferEvent; a sample
 * with the recovery flag up offers 0, one without a key is not judged):
 *
 *     offered(s) + taken(s) <= stock
 *
 * (reported as the units offered beyond it, at most offered(s): units taken beyond the stock are
 * oversold's)
 * where stock is what the harness created, and taken(s) is the units of the orders told 202 before s
 * whose order the record has at the end, held or rejected. Each such order was reserved on Redis
 * before s (the 202 follows the reservation), and the record has it, so it was not lost with Redis:
 * a correct Redis counts it — in its stock key, or, after a rebuild, as recorded, in flight in the
 * stream, or held by a pipeline. (An order the record lost is lostAcknowledged's: its unit may be
 * offered again. Cancelled and expired orders are left out: the history does not say when they gave
 * their units back.) After the run, with everything recorded, the same bound with every held order:
 *
 *     remaining + held + (units of acknowledged orders the record rejected) <= stock
 *
 * Samples sent between the fault's start and the first 202 to a request sent after the fault ended
 * are not judged: Redis may then be down, empty or rolled back while the service sells nothing from
 * it (it closes the sale until the sale is checked, or rebuilt); a 202 after the fault shows it is
 * selling from this Redis again. Everything before the fault, after that 202, and the final state is.
 */
function checkOffers(
  events: readonly HistoryEvent[],
  sale: SaleFacts,
  final: FinalState,
  run: {
    acknowledged: ReadonlyMap<string, string>;
    recorded: ReadonlyMap<string, RecordedOrder>;
    quantityOf: (id: string) => number;
    heldUnits: number;
    invokes: readonly HistoryEvent[];
    faultStart: number | undefined;
    faultEnd: number | undefined;
  },
): { violations: string[]; stats: OfferStats } {
  // When each order was first told (202), for the orders the record has and did not give back.
  const toldAt = new Map<string, number>();
  for (const e of events) {
    if (e.type === 'ok' && e.orderId !== undefined && !toldAt.has(e.orderId)) toldAt.set(e.orderId, e.t);
  }
  const taken = [...toldAt]
    .filter(([id]) => {
      const status = run.recorded.get(id)?.status;
      return status !== undefined && !GIVEN_BACK.has(status);
    })
    .map(([id, t]) => ({ t, units: run.quantityOf(id) }))
    .sort((a, b) => a.t - b.t);

  // The window not judged: from the fault's start to the first 202 to a request sent after its end.
  let resumedAt = Number.POSITIVE_INFINITY;
  if (run.faultStart === undefined) resumedAt = Number.NEGATIVE_INFINITY;
  else if (run.faultEnd !== undefined) {
    const sentAfter = new Set(
      run.invokes
        .filter((e) => e.t >= (run.faultEnd as number))
        .map((e) => `${(e as { key: string }).key}#${(e as { attempt: number }).attempt}`),
    );
    const first = events.find(
      (e) => e.type === 'ok' && sentAfter.has(`${e.key}#${e.attempt}`) && e.t >= (run.faultEnd as number),
    );
    if (first) resumedAt = first.t;
  }
  const samples = events.filter((e): e is OfferEvent & { t: number } => e.type === 'offer');
  const judged = samples.filter(
    (e) =>
      e.offered !== null &&
      (run.faultStart === undefined || e.sentAt < run.faultStart || e.sentAt >= resumedAt),
  );

  // Judged samples in the order they were sent, against the running sum of the units taken before.
  const over: string[] = [];
  let worst = 0;
  let next = 0;
  let before = 0;
  for (const sample of [...judged].sort((a, b) => a.sentAt - b.sentAt)) {
    while (next < taken.length && (taken[next] as { t: number }).t < sample.sentAt) {
      before += (taken[next] as { units: number }).units;
      next++;
    }
    const offered = sample.recovering ? 0 : (sample.offered as number);
    const excess = Math.min(offered, offered + before - sale.stock);
    if (excess <= 0) continue;
    worst = Math.max(worst, excess);
    over.push(
      `at ${(sample.sentAt / 1000).toFixed(2)} s Redis offered ${offered} while 202s before it took ${before} of ${sale.stock} (${excess} too many)`,
    );
  }
  const violations = over.length > 5 ? [...over.slice(0, 4), `${over.length} samples over in all`] : over;

  const rejectedTold = [...run.acknowledged.keys()].filter(
    (id) => run.recorded.get(id)?.status === 'rejected',
  );
  const remaining = final.redisRemaining ?? 0;
  const rejectedUnits = sum(rejectedTold.map(run.quantityOf));
  const finalExcess = Math.min(remaining, remaining + run.heldUnits + rejectedUnits - sale.stock);
  if (finalExcess > 0) {
    worst = Math.max(worst, finalExcess);
    violations.unshift(
      `at the end Redis offers ${remaining} while the record holds ${run.heldUnits} and rejected ${rejectedUnits} told 202, of ${sale.stock} (${finalExcess} too many)`,
    );
  }
  return {
    violations,
    stats: {
      samples: samples.length,
      judged: judged.length,
      judgedAfterFault: judged.filter((e) => run.faultEnd !== undefined && e.sentAt >= run.faultEnd).length,
      worstExcess: worst,
    },
  };
}

function add(map: Map<string, Set<string>>, key: string, value: string): void {
  const set = map.get(key) ?? new Set<string>();
  set.add(value);
  map.set(key, set);
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
