import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresServer, RedisServer } from '@lockstock/servers';
import { connectLab, prepareLabDatabase } from '../../src/lab/env.js';
import { fairnessHtml, fairnessTable } from '../../src/lab/fairness/lab.js';
import { runFairness, type FairnessRow } from '../../src/lab/fairness/run.js';
import { renderMarkdown } from '../../src/support/table.js';

let redisServer: RedisServer;
let postgres: PostgresServer;
let env: Awaited<ReturnType<typeof connectLab>>;

beforeAll(async () => {
  [redisServer, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
  env = await connectLab(redisServer.url, postgres.url, 4);
  await prepareLabDatabase(env);
}, 60_000);
afterAll(async () => {
  await env?.close();
  await Promise.all([redisServer?.stop(), postgres?.stop()]);
});

/** P(X ≥ k) for X ~ Hypergeometric(population, successes, draws): a lottery's tail. */
function hypergeometricTail(population: number, successes: number, draws: number, k: number): number {
  const logChoose = (n: number, r: number) => {
    let sum = 0;
    for (let i = 1; i <= r; i++) sum += Math.log(n - r + i) - Math.log(i);
    return sum;
  };
  let p = 0;
  for (let x = k; x <= Math.min(successes, draws); x++) {
    p += Math.exp(
      logChoose(successes, x) + logChoose(population - successes, draws - x) - logChoose(population, draws),
    );
  }
  return p;
}

describe('lab: who gets the units', () => {
  it('first come gives bots far more than their share; the waiting room and the raffle give them their share (p < 0.001)', async () => {
    const rows = await runFairness(env, { buyers: 400, stock: 40, seed: 39 });
    const row = (policy: FairnessRow['policy']) => rows.find((r) => r.policy === policy) as FairnessRow;
    console.log(renderMarkdown(fairnessTable(rows)).join('\n'));
    for (const r of rows) expect(r.units, r.policy).toBe(40);
    // Bots sent ten times the requests of people (per buyer), in every policy but the room's asks.
    expect(row('first come').botUnitShare).toBeGreaterThan(0.5);
    // A fair lottery over the 400 buyers would give bots k or more of the 40 units with probability
    // below 0.001: the room (random order within its first window) and the raffle stay under that k.
    const { bots } = row('raffle');
    let k = 1;
    while (hypergeometricTail(400, bots, 40, k) >= 0.001) k++;
    expect(row('raffle').toBots).toBeLessThan(k);
    expect(row('waiting room').toBots).toBeLessThan(k);
    expect(row('waiting room, capped').toBots).toBeLessThan(k);
    expect(fairnessHtml(rows)).toContain('<table class="fairness">');
  }, 120_000);
});
