import { describe, expect, it } from 'vitest';
import { checkRow, type CheckName, type FinalState, type RecordedOrder } from './harness/checker.js';
import { History } from './harness/history.js';
import { row, unexpectedOutcomes } from './harness/rows.js';

/**
 * The fault checker on hand-written histories: a clean run passes, and each kind of violation is
 * reported by its own check (a checker that never fails proves nothing).
 */
const SALE = { stock: 3, perUserLimit: 1 };

/** A history builder: buyers' attempts with their answers, and a fault window. */
function scenario() {
  const history = new History();
  const buy = (
    user: string,
    key: string,
    answer: { status?: number; orderId?: string; error?: string },
    server = 'a',
  ) => {
    const attempt = history.events.filter((e) => e.type === 'invoke' && e.key === key).length + 1;
    const base = { f: 'buy' as const, process: key, user, key, server, attempt };
    history.add({ type: 'invoke', ...base });
    const type =
      answer.status === 202 ? 'ok' : answer.status !== undefined && answer.status < 500 ? 'fail' : 'info';
    history.add({ type, ...base, ...answer });
  };
  /** A sample of Redis's offer: `offered` units on the stock key, or none (null). */
  const offer = (offered: number | null, recovering = false) => {
    // Sent after everything before it (the clock has microseconds: make sure it moved on).
    const last = history.events.at(-1)?.t ?? -1;
    while (history.now() <= last);
    const sentAt = history.now();
    history.add({ type: 'offer', sentAt, offered, recovering });
  };
  return { history, buy, offer };
}

const order = (id: string, userId: string, status = 'confirmed'): RecordedOrder => ({
  id,
  userId,
  quantity: 1,
  status,
});

function final(orders: RecordedOrder[], overrides: Partial<FinalState> = {}): FinalState {
  const held = orders.filter((o) => o.status === 'confirmed').length;
  return {
    orders,
    recordedSold: held,
    recordedStock: SALE.stock,
    recordedPerUserLimit: SALE.perUserLimit,
    redisRemaining: SALE.stock - held,
    pending: 0,
    undelivered: 0,
    deadLetters: 0,
    drained: true,
    processProblems: [],
    ...overrides,
  };
}

const failing = (report: ReturnType<typeof checkRow>): CheckName[] =>
  report.checks.filter((c) => !c.valid).map((c) => c.name);

describe('the fault checker', () => {
  it('passes a clean run: 202s recorded, refusals not, an unknown outcome resolved by the retry', () => {
    const { history, buy, offer } = scenario();
    offer(3);
    buy('u1', 'k1', { status: 202, orderId: '1' });
    offer(2);
    history.fault('f', 'start', 'x');
    offer(null); // Redis lost the sale
    buy('u2', 'k2', { status: 503, error: 'service_unavailable' });
    offer(3); // not rebuilt yet: not judged until the sale sold again
    history.fault('f', 'end', 'x');
    offer(0, true); // the rebuild's flag is up: nothing is offered
    buy('u2', 'k2', { status: 202, orderId: '2' }); // the retry with the same key
    offer(1);
    buy('u3', 'k3', { error: 'timeout' }); // gave up: the request did buy
    offer(0);
    buy('u4', 'k4', { status: 409, error: 'sold_out' });
    buy('u1', 'k1b', { status: 409, error: 'limit_reached' });
    const report = checkRow(
      history.events,
      SALE,
      final([order('1', 'u1'), order('2', 'u2'), order('3', 'u3')], { redisRemaining: 0 }),
      {
        boundMs: 5000,
      },
    );
    expect(failing(report)).toEqual([]);
    expect(report.stats).toMatchObject({
      acknowledged: 2,
      unknown: 2,
      unavailable: 1,
      unknownThatBought: 1,
      unresolved: 1,
    });
    expect(report.stats.recoveryMs).toEqual(expect.any(Number));
    expect(report.stats.offers).toEqual({ samples: 7, judged: 4, judgedAfterFault: 2, worstExcess: 0 });
  });

  it.each<
    [
      string,
      (s: ReturnType<typeof scenario>) => { orders: RecordedOrder[]; state?: Partial<FinalState> },
      CheckName[],
    ]
  >([
    [
      'a 202 the record lost (and its unit)',
      ({ buy }) => {
        buy('u1', 'k1', { status: 202, orderId: '1' });
        return { orders: [], state: { redisRemaining: 2 } };
      },
      ['lostAcknowledged', 'unsold'],
    ],
    [
      'a 202 the record rejected',
      ({ buy }) => {
        buy('u1', 'k1', { status: 202, orderId: '1' });
        return { orders: [order('1', 'u1', 'rejected')], state: { redisRemaining: 3 } };
      },
      // Redis offers the unit the 202 took again (what a rebuild that forgot it does).
      ['acknowledgedThenRejected', 'overOffered'],
    ],
    [
      'one key told two orders',
      ({ buy }) => {
        buy('u1', 'k1', { status: 202, orderId: '1' });
        buy('u1', 'k1', { status: 202, orderId: '2' });
        return { orders: [order('1', 'u1')] };
      },
      // The user was told two units, one of which the record lost: reported once, as lost.
      ['toldTwice', 'lostAcknowledged'],
    ],
    [
      'more held than the stock',
      ({ buy }) => {
        for (const u of ['u1', 'u2', 'u3', 'u4']) buy(u, `k-${u}`, { status: 202, orderId: u.slice(1) });
        const orders = ['1', '2', '3', '4'].map((id) => order(id, `u${id}`));
        return { orders, state: { recordedSold: 4, redisRemaining: 0 } };
      },
      ['oversold'],
    ],
    [
      'a lost 202 whose unit was sold again (the loss, counted once: not oversold, not over the limit)',
      ({ buy }) => {
        buy('u1', 'k1', { status: 202, orderId: '1' });
        buy('u1', 'k1b', { status: 202, orderId: '5' }); // after the loss, the user's second unit
        for (const u of ['u2', 'u3']) buy(u, `k-${u}`, { status: 202, orderId: u.slice(1) });
        const orders = [order('5', 'u1'), order('2', 'u2'), order('3', 'u3')];
        return { orders, state: { redisRemaining: 0 } };
      },
      ['lostAcknowledged'],
    ],
    [
      'Redis offering units the 202s before had taken (after the fault: a rebuild that forgot a backlog)',
      ({ history, buy, offer }) => {
        buy('u1', 'k1', { status: 202, orderId: '1' });
        buy('u2', 'k2', { status: 202, orderId: '2' });
        history.fault('f', 'start', 'x');
        history.fault('f', 'end', 'x');
        buy('u3', 'k3', { status: 202, orderId: '3' });
        offer(1); // 3 units told before, stock 3: Redis should offer none
        return {
          orders: [order('1', 'u1'), order('2', 'u2'), order('3', 'u3')],
          state: { redisRemaining: 0 },
        };
      },
      ['overOffered'],
    ],
    [
      'Redis offering more than the record leaves at the end',
      ({ buy }) => {
        buy('u1', 'k1', { status: 202, orderId: '1' });
        return { orders: [order('1', 'u1')], state: { redisRemaining: 3 } };
      },
      ['overOffered'],
    ],
    [
      'a record whose stock is not the one the harness created',
      ({ buy }) => {
        buy('u1', 'k1', { status: 202, orderId: '1' });
        return { orders: [order('1', 'u1')], state: { recordedStock: 4 } };
      },
      ['recordConsistent'],
    ],
    [
      'a user over the limit',
      ({ buy }) => {
        buy('u1', 'k1', { status: 202, orderId: '1' });
        buy('u1', 'k2', { status: 202, orderId: '2' });
        return { orders: [order('1', 'u1'), order('2', 'u1')] };
      },
      ['overLimit'],
    ],
    [
      'an order for a buyer who was only told no',
      ({ buy }) => {
        buy('u1', 'k1', { status: 409, error: 'sold_out' });
        return { orders: [order('1', 'u1')] };
      },
      ['refusedButRecorded'],
    ],
    [
      'sales.sold disagreeing with the orders',
      ({ buy }) => {
        buy('u1', 'k1', { status: 202, orderId: '1' });
        return { orders: [order('1', 'u1')], state: { recordedSold: 2, redisRemaining: 2 } };
      },
      ['recordConsistent'],
    ],
    [
      'a 500',
      ({ buy }) => {
        buy('u1', 'k1', { status: 500, error: 'internal_error' });
        return { orders: [], state: { redisRemaining: 3 } };
      },
      ['internalErrors'],
    ],
    [
      'a pipeline that did not drain',
      ({ buy }) => {
        buy('u1', 'k1', { status: 202, orderId: '1' });
        return { orders: [order('1', 'u1')], state: { drained: false, pending: 1 } };
      },
      ['drained'],
    ],
    [
      'a process that died on its own',
      () => ({
        orders: [],
        state: { redisRemaining: 3, processProblems: ["worker: Emitted 'error' event"] },
      }),
      ['crashes'],
    ],
    [
      'a sale that never answered after the fault',
      ({ history, buy }) => {
        history.fault('f', 'start', 'x');
        history.fault('f', 'end', 'x');
        buy('u1', 'k1', { status: 503, error: 'service_unavailable' });
        return { orders: [], state: { redisRemaining: 3 } };
      },
      ['recovery'],
    ],
  ])('reports %s', (_name, build, expected) => {
    const s = scenario();
    const { orders, state } = build(s);
    const report = checkRow(s.history.events, SALE, final(orders, state), { boundMs: 5000 });
    expect(failing(report).sort()).toEqual([...expected].sort());
    expect(report.valid).toBe(false);
  });

  it('judges the offer outside the fault only: from its start until a 202 after its end, Redis may be anything', () => {
    const over = (samplesAfterResume: boolean) => {
      const { history, buy, offer } = scenario();
      buy('u1', 'k1', { status: 202, orderId: '1' });
      history.fault('f', 'start', 'x');
      offer(3); // rolled back, before any check: the service sells nothing from it
      history.fault('f', 'end', 'x');
      offer(3); // still not rebuilt: no 202 after the fault yet
      buy('u2', 'k2', { status: 202, orderId: '2' });
      if (samplesAfterResume) offer(2); // selling again, and still offering u1's unit
      const orders = [order('1', 'u1'), order('2', 'u2')];
      return checkRow(history.events, SALE, final(orders, { redisRemaining: 1 }), { boundMs: 5000 });
    };
    expect(failing(over(false))).toEqual([]);
    expect(over(false).stats.offers).toMatchObject({ samples: 2, judged: 0 });
    const caught = over(true);
    expect(failing(caught)).toEqual(['overOffered']);
    expect(caught.checks.find((c) => c.name === 'overOffered')).toMatchObject({
      count: 1,
      examples: [expect.stringMatching(/Redis offered 2 while 202s before it took 2 of 3 \(1 too many\)/)],
    });
  });

  it('a row that must fail fails the suite when the checker finds nothing, and passes when it does', () => {
    const mustFail = row('postgres-immediate-stop-async-commit');
    const clean = checkRow([], SALE, final([]), { boundMs: 5000 });
    expect(clean.valid).toBe(true);
    expect(unexpectedOutcomes(mustFail, clean)).toEqual([
      'lostAcknowledged was expected to fail under this fault, and the checker did not see it',
      'unsold was expected to fail under this fault, and the checker did not see it',
    ]);
    const { history, buy } = scenario();
    buy('u1', 'k1', { status: 202, orderId: '1' });
    const lost = checkRow(history.events, SALE, final([], { redisRemaining: 2 }), { boundMs: 5000 });
    expect(failing(lost).sort()).toEqual(['lostAcknowledged', 'unsold']);
    expect(unexpectedOutcomes(mustFail, lost)).toEqual([]);
    expect(unexpectedOutcomes(row('postgres-immediate-stop'), lost)).toHaveLength(2);
  });

  it('bounds recovery, and measures it on the named server only', () => {
    const { history, buy } = scenario();
    history.fault('f', 'start', 'a');
    history.fault('f', 'end', 'a');
    buy('u1', 'k1', { status: 202, orderId: '1' }, 'b');
    const report = checkRow(history.events, SALE, final([order('1', 'u1')]), { server: 'a', boundMs: 5000 });
    expect(failing(report)).toEqual(['recovery']);
    expect(
      checkRow(history.events, SALE, final([order('1', 'u1')]), { server: 'b', boundMs: 5000 }).valid,
    ).toBe(true);
    expect(checkRow(history.events, SALE, final([order('1', 'u1')]), { boundMs: -1 }).valid).toBe(false);
  });
});
