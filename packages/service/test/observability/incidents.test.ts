import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { longTier } from '../helpers/tier.js';
import { until } from '../helpers/until.js';
import { ALERT_WINDOWS, OperatorRig, SECRET, type Watcher } from '../helpers/operator.js';
import { signToken } from '../../src/http/auth.js';
import { saleKeys } from '../../src/sale/keys.js';

/**
 * The incidents, as an operator lives them (issue 47), watched by two real Prometheus servers with
 * the shipped rules at once, one scraping every second and one every 15 s: a `serve` of one process
 * and a `serve --processes 2` (`--workers 0`), and a separate `lockstock worker --metrics-port`, on
 * one Redis and one PostgreSQL. Through a PostgreSQL outage and a Redis outage, every alert of the
 * incident fires and resolves within the window docs/runbook.md gives for its scrape interval (read
 * from Prometheus's own evaluations, not from when this test looked), no other alert fires, buyers are
 * answered 503 (never 500) for what needs the missing dependency, and every process logs each
 * outage in one line when it starts and one when it ends. A sale alert fires once for the sale,
 * whichever serve reports it.
 *
 * Minutes long (the alerts' `for` and a 15 s scrape): in the long tier (`npm run test:long`), not
 * `npm test`, whose quick row of the operator's view is operator.test.ts.
 */
let rig: OperatorRig;
let saleId: string;
let db: Redis;

beforeAll(async () => {
  if (!longTier) return;
  rig = await OperatorRig.start({ serves: [1, 2], intervals: [1, 15] });
  db = new Redis(rig.redis.url);
  // Buyers run through two outages as fast as they are answered: a stock they cannot sell out (a
  // sold-out sale answers 409 from memory, thousands a second, and dilutes the refused ratio).
  saleId = await rig.createSale('incidents', 10_000_000);
  const statuses = await Promise.all(
    ['i1', 'i2', 'i3', 'i4'].map((u, i) => rig.buy(rig.urls[i % 2]!, saleId, u)),
  );
  expect(statuses).toEqual([202, 202, 202, 202]);
}, 300_000);

afterAll(async () => {
  db?.disconnect();
  await rig?.stop();
});

/**
 * Expects exactly `names` to have fired in [fromMs, now]; else says when each other one fired and
 * resolved, relative to fromMs.
 */
async function expectOnlyFiring(watcher: Watcher, fromMs: number, names: string[], mayFire: string[] = []) {
  const seen = (await anyFiring(watcher, fromMs)).filter((name) => !mayFire.includes(name));
  const others = seen.filter((name) => !names.includes(name));
  const spans = await Promise.all(
    others.map(async (name) =>
      (await watcher.firingSpans(name, fromMs)).map((s) => `${name} ${s.from - fromMs}..${s.to - fromMs} ms`),
    ),
  );
  expect(seen, `at a ${watcher.intervalS} s scrape: ${spans.flat().join(', ')}`).toEqual(names);
}

/**
 * Every alert name seen firing in [fromMs, now], from the first whole second after fromMs: at the
 * second before, an alert that resolved just before fromMs still shows (its stale marker is written
 * at its evaluation's time, which may come after that second).
 */
async function anyFiring(watcher: Watcher, fromMs: number): Promise<string[]> {
  const query = new URLSearchParams({
    query: 'count by (alertname) (ALERTS{alertstate="firing"})',
    start: String(Math.ceil(fromMs / 1000)),
    end: String(Math.ceil(Date.now() / 1000)),
    step: '1',
  });
  const data = await watcher.prometheus.api<{ result: Array<{ metric: { alertname: string } }> }>(
    `/api/v1/query_range?${query}`,
  );
  return data.result.map((r) => r.metric.alertname).sort();
}

/** The log lines each process wrote since `since` (line counts of each spawned CLI), by pid. */
function linesByPid(since: number[]): Array<Map<number, string[]>> {
  return [...rig.serves, rig.worker].map((spawned, i) => {
    const byPid = new Map<number, string[]>();
    for (const line of spawned.allLines().slice(since[i])) {
      const pid = line.startsWith('{') ? ((JSON.parse(line) as { pid?: number }).pid ?? 0) : 0;
      byPid.set(pid, [...(byPid.get(pid) ?? []), line]);
    }
    return byPid;
  });
}
const lineCounts = () => [...rig.serves, rig.worker].map((spawned) => spawned.allLines().length);

/**
 * One line when `dependency` went and one when it came back, per process that noticed (a serve, each
 * HTTP process of `serve --processes 2`, the worker): never one per refused request or retry.
 */
function expectOneLineEachWay(since: number[], dependency: 'redis' | 'database', atMost: number) {
  const all = linesByPid(since);
  let noticed = 0;
  for (const [i, byPid] of all.entries()) {
    for (const [pid, lines] of byPid) {
      const text = `process ${i} (pid ${pid}):\n${lines.join('\n')}`;
      const down = lines.filter((line) => line.includes(`"msg":"${dependency} unavailable`));
      const back = lines.filter((line) => line.includes(`"msg":"${dependency} is back"`));
      expect(down.length, text).toBeLessThanOrEqual(1);
      expect(back.length, text).toBe(down.length);
      noticed += down.length;
      expect(lines.length, text).toBeLessThanOrEqual(atMost);
      expect(
        lines.filter((line) => line.includes('"stack"')),
        text,
      ).toEqual([]);
    }
  }
  return noticed;
}

/** Fires and resolves within its documented windows at every scrape interval, `count` label sets. */
async function expectWithinWindows(
  name: keyof typeof ALERT_WINDOWS,
  count: number,
  downAt: number,
  backAt: number,
) {
  for (const watcher of rig.watchers) {
    const spans = await watcher.firingSpans(name, downAt);
    const S = watcher.intervalS;
    const window = ALERT_WINDOWS[name];
    const where = `${name} at a ${S} s scrape: ${JSON.stringify(spans.map((s) => ({ ...s, from: s.from - downAt, to: s.to - backAt })))}`;
    expect(spans, where).toHaveLength(count);
    for (const span of spans) {
      expect(span.from - downAt, where).toBeLessThanOrEqual(window.fires(S) * 1000);
      // `to` is the last 1 s step that still shows it firing: the step before the evaluation that
      // found it resolved wrote its stale marker (a step shows the last firing sample until then).
      // So it resolved one step after `to` — not one interval after, which counted S - 1 s twice.
      expect(span.to + 1000 - backAt, where).toBeLessThanOrEqual(window.resolves(S) * 1000);
    }
  }
}

async function untilFiring(name: string, count: number, limitMs: number) {
  await until(
    `${name} fires (${count}) at every scrape interval`,
    async () =>
      (await Promise.all(rig.watchers.map(async (w) => (await w.firing(name)).length))).every(
        (n) => n === count,
      ),
    limitMs,
  );
}
async function untilResolved(names: string[], limitMs: number) {
  await until(
    `${names.join(', ')} resolve at every scrape interval`,
    async () =>
      (await Promise.all(rig.watchers.map((w) => w.alerts()))).every((alerts) =>
        alerts.every((a) => !names.includes(a.labels.alertname!)),
      ),
    limitMs,
  );
}

describe.runIf(longTier)('incidents, watched at a 1 s and a 15 s scrape', () => {
  it('a sale alert fires once for the sale, whichever serve (or HTTP process) reports it', async () => {
    // An entry the pipeline cannot read: the worker moves it to the sale's dead-letter stream.
    const at = Date.now();
    await db.xadd(saleKeys(saleId).stream, '*', 'junk', '1');
    await untilFiring('LockstockDeadLetters', 1, 240_000);
    for (const watcher of rig.watchers) {
      const [alert] = await watcher.firing('LockstockDeadLetters');
      expect(alert?.labels.sale).toBe(saleId);
    }
    const emptiedAt = Date.now();
    await db.del(saleKeys(saleId).dead);
    await untilResolved(['LockstockDeadLetters'], 120_000);
    await expectWithinWindows('LockstockDeadLetters', 1, at, emptiedAt);
  }, 400_000);

  it('PostgreSQL down: LockstockDatabaseDown and LockstockWorkerFailing fire and resolve in their windows; purchases 503, never 500; one log line each way', async () => {
    const since = lineCounts();
    const downAt = Date.now();
    await rig.postgres.stopImmediately();
    // Buyers keep buying (Redis sells on: 202), and what needs the record is answered 503.
    const buyers = rig.buyers(saleId, 'pg-outage');
    const needsRecord: number[] = [];
    try {
      await untilFiring('LockstockDatabaseDown', 2, 240_000);
      await untilFiring('LockstockWorkerFailing', 1, 240_000);
      // A sale cannot be created without the record.
      const created = await fetch(`${rig.urls[1]}/api/sales`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${signToken(SECRET, 'admin', { admin: true })}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ name: 'during', stock: 1 }),
      });
      needsRecord.push(created.status);
      expect(((await created.json()) as { error: string }).error).toBeTypeOf('string');
    } finally {
      const statuses = await buyers.stop();
      expect(new Set(statuses)).toEqual(new Set([202]));
    }
    expect(needsRecord).toEqual([503]);
    await rig.postgres.restart();
    // The cause ends once the server accepts connections again (a restart takes seconds here).
    const backAt = Date.now();
    await untilResolved(['LockstockDatabaseDown', 'LockstockWorkerFailing'], 240_000);
    await expectWithinWindows('LockstockDatabaseDown', 2, downAt, backAt);
    await expectWithinWindows('LockstockWorkerFailing', 1, downAt, backAt);
    for (const watcher of rig.watchers)
      await expectOnlyFiring(watcher, downAt, ['LockstockDatabaseDown', 'LockstockWorkerFailing']);
    // Each serve and the worker noticed; the HTTP processes of serve --processes 2 need no record.
    expect(expectOneLineEachWay(since, 'database', 12)).toBeGreaterThanOrEqual(3);
  }, 600_000);

  it('Redis down: LockstockRedisDown pages within a minute at both scrapes, LockstockPurchasesRefused follows; both resolve; one log line each way', async () => {
    const since = lineCounts();
    const downAt = Date.now();
    await rig.redis.kill();
    const buyers = rig.buyers(saleId, 'redis-outage');
    let statuses: number[];
    try {
      await untilFiring('LockstockRedisDown', 2, 240_000);
      await untilFiring('LockstockPurchasesRefused', 1, 240_000);
    } finally {
      statuses = await buyers.stop();
    }
    expect(statuses.filter((s) => s !== 503 && s !== 0)).toEqual([]);
    await rig.redis.restart();
    const backAt = Date.now(); // once it accepts connections again
    await untilResolved(['LockstockRedisDown', 'LockstockPurchasesRefused'], 240_000);
    await expectWithinWindows('LockstockRedisDown', 2, downAt, backAt);
    // An outage that refuses every purchase pages within a minute, whatever the scrape interval.
    for (const watcher of rig.watchers)
      for (const span of await watcher.firingSpans('LockstockRedisDown', downAt))
        expect(span.from - downAt, `at a ${watcher.intervalS} s scrape`).toBeLessThanOrEqual(60_000);
    await expectWithinWindows('LockstockPurchasesRefused', 1, downAt, backAt);
    // The worker's pipeline fails while Redis is away, too: a warning it may raise.
    for (const watcher of rig.watchers)
      await expectOnlyFiring(
        watcher,
        downAt,
        ['LockstockPurchasesRefused', 'LockstockRedisDown'],
        ['LockstockWorkerFailing'],
      );
    expect(expectOneLineEachWay(since, 'redis', 16)).toBeGreaterThanOrEqual(4);
  }, 600_000);
});
