import { describe, expect, it } from 'vitest';
import { checkRow, type CheckName, type FinalState, type RecordedOrder } from './harness/checker.js';
import { History } from './harness/history.js';

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
  return { history, buy };
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
    const { history, buy } = scenario();
    buy('u1', 'k1', { status: 202, orderId: '1' });
    history.fault('f', 'start', 'x');
    buy('u2', 'k2', { status: 503, error: 'service_unavailable' });
    history.fault('f', 'end', 'x');
    buy('u2', 'k2', { status: 202, orderId: '2' }); // the retry with the same key
    buy('u3', 'k3', { error: 'timeout' }); // gave up: the request did buy
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
      ['acknowledgedThenRejected'],
    ],
    [
      'one key told two orders',
      ({ buy }) => {
        buy('u1', 'k1', { status: 202, orderId: '1' });
        buy('u1', 'k1', { status: 202, orderId: '2' });
        return { orders: [order('1', 'u1')] };
      },
      ['toldTwice', 'lostAcknowledged', 'overLimit'],
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
