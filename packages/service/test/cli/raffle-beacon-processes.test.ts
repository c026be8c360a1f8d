import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@lockstock/servers';
import { signToken } from '../../src/http/auth.js';
import { roundAfter, roundTime } from '../../src/sale/raffle/beacon.js';
import { apiClient } from '../helpers/api-client.js';
import { chainInfo, ownChain, Relay } from '../helpers/beacon.js';
import { runCli, spawnCli, waitUntilHealthy } from '../helpers/cli.js';
import { useServeProcesses } from '../helpers/serve-processes.js';
import { until } from '../helpers/until.js';

/**
 * Issue 44's beacon through real processes: `serve` runs on a drand chain given by hand
 * (LOCKSTOCK_BEACON_CHAIN: a chain whose BLS key this test holds, served by a relay on loopback), an
 * operator's `POST …/raffle/draw` waits for the round (202), is refused a forged round (503), draws
 * with the true one, and the real CLI verifies the draw only when told to trust that chain.
 */
const SECRET = 'raffle-beacon-processes-secret-0123';
const ENTRANTS = 8;
const STOCK = 3;

const own = ownChain();
const relay = new Relay();
let dir: string;
let chainFile: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lockstock-beacon-'));
  relay.rounds.set(1, own.sign(1)); // what serve asks for at start
  relay.info = chainInfo(own.chain);
  await relay.start();
  // The chain's /info, as an operator saves it from their relay.
  chainFile = join(dir, 'chain.json');
  writeFileSync(chainFile, await (await fetch(`${relay.url}/info`)).text());
});
afterAll(async () => {
  await relay.close();
  rmSync(dir, { recursive: true, force: true });
});

const stack = useServeProcesses(1, SECRET, () => ({
  LOCKSTOCK_BEACON_URL: relay.url,
  LOCKSTOCK_BEACON_CHAIN: chainFile,
  LOG_FORMAT: 'json',
}));
const call = apiClient(SECRET);

describe('a beacon raffle on a hand-given drand chain, across real processes', () => {
  it('draws through POST …/raffle/draw once the round is out; raffle verify passes only with --trust-chain', async () => {
    const serve = stack.server(0);
    // The chain given by hand is said at start, naming the option a verifier needs.
    const said = stack.processes[0]!.allLines().find((line) => line.includes('LOCKSTOCK_BEACON_CHAIN'));
    expect(said, stack.processes[0]!.output()).toContain('--trust-chain');

    const created = await call('POST', `${serve}/api/sales`, 'admin', {
      body: {
        name: 'beacon raffle',
        stock: STOCK,
        admission: 'raffle',
        drawAt: new Date(Date.now() + 3_600_000).toISOString(),
        payWithinSeconds: 3_600,
      },
    });
    expect(created.status).toBe(201);
    const saleId = String(created.body.id);
    const entries = await Promise.all(
      Array.from({ length: ENTRANTS }, (_, i) =>
        call<{ receipt: { payload: { commitment: { closesAt: string; beacon: unknown } } } }>(
          'POST',
          `${serve}/api/sales/${saleId}/raffle/entries`,
          `entrant-${i}`,
        ),
      ),
    );
    expect(entries.map((e) => e.status)).toEqual(entries.map(() => 202));
    const { commitment } = entries[0]!.body.receipt.payload;
    expect(commitment.beacon).toEqual(own.chain);
    const receiptFile = join(dir, 'receipt.json');
    writeFileSync(receiptFile, JSON.stringify(entries[0]!.body));
    const round = roundAfter(own.chain, Date.parse(commitment.closesAt));
    const drawUrl = `${serve}/api/sales/${saleId}/raffle/draw`;

    // The operator draws early: entries close, the draw waits for the round fixed at creation.
    const response = await fetch(drawUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${signToken(SECRET, 'admin', { admin: true })}` },
    });
    const waiting = { status: response.status, body: (await response.json()) as unknown };
    expect(waiting).toEqual({
      status: 202,
      body: {
        result: 'awaiting_beacon',
        round,
        roundAt: new Date(roundTime(own.chain, round)).toISOString(),
        reason: 'round_not_out',
        message: expect.stringContaining(`round ${round} is not out yet`) as string,
      },
    });
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    // The relay answers a signature the chain did not make: a 503 in the API's shape, nothing drawn.
    relay.rounds.set(round, { round, signature: own.sign(round + 1).signature });
    const lied = await call('POST', drawUrl, 'admin');
    expect(lied.status).toBe(503);
    expect(lied.body).toEqual({
      error: 'beacon_unavailable',
      message: expect.stringContaining('a signature its chain did not make') as string,
    });
    expect((await call('GET', `${serve}/api/sales/${saleId}/raffle`, 'anyone')).body.phase).toBe('closed');

    // The round comes out. The raffle runner polls it too: its request is held at the relay, so the
    // operator's request (the next one to arrive) is the one answered, and the draw is the API's.
    relay.hold(round);
    relay.rounds.set(round, own.sign(round));
    await relay.waiting(round, 1);
    const mark = relay.received;
    const draw = call('POST', drawUrl, 'admin');
    await Promise.race([
      relay.waiting(round, 2),
      draw.then((answer) => {
        throw new Error(`the draw answered without asking the relay: ${JSON.stringify(answer)}`);
      }),
    ]);
    relay.release(round, mark);
    const drawn = await draw;
    relay.unhold(round);
    expect({ status: drawn.status, body: drawn.body }).toEqual({
      status: 200,
      body: { result: 'drawn', entries: ENTRANTS, round },
    });

    await until(
      'the winners recorded',
      async () => (await call('GET', `${serve}/api/sales/${saleId}/raffle`, 'anyone')).body.winners === STOCK,
      60_000,
    );
    // The real CLI, offline for the beacon: with the chain's /info given by hand, verified and said so.
    const trusted = await runCli([
      'raffle',
      'verify',
      serve,
      '--receipt',
      receiptFile,
      '--trust-chain',
      chainFile,
    ]);
    expect(trusted.stdout).toContain(`TRUST drand chain ${own.chain.chainHash}`);
    expect(trusted.stdout).toContain('NOT pinned by lockstock: trusted only because it was given by hand');
    expect(trusted.stdout).toContain(`ok   the draw used round ${round}`);
    expect(trusted.stdout).not.toContain('FAIL');
    expect(trusted.stdout).toContain(`verified: raffle ${saleId}'s draw is the one committed to`);
    expect(trusted.code).toBe(0);
    // Without it, quicknet is the only chain trusted: the operator's own chain fails.
    const untrusted = await runCli(['raffle', 'verify', serve, '--receipt', receiptFile]);
    expect(untrusted.stdout).toContain(`FAIL the commitment's beacon (chain ${own.chain.chainHash}`);
    expect(untrusted.stdout).toContain('is NOT a chain this verifier trusts');
    expect(untrusted.stdout).toContain('NOT verified');
    expect(untrusted.code).toBe(1);
  }, 180_000);

  it('with no relay reachable at start, says so and creates raffles commit–reveal only', async () => {
    const port = await freePort();
    const nobody = await freePort(); // nothing listens there
    const serve = spawnCli(
      ['serve', '--port', String(port), '--redis', stack.redisUrl, '--database', stack.postgres.url],
      {
        LOCKSTOCK_JWT_SECRET: SECRET,
        LOCKSTOCK_PROCESSES: '1',
        LOCKSTOCK_BEACON_URL: `http://127.0.0.1:${nobody}/chain`,
        LOG_FORMAT: 'json',
      },
    );
    try {
      const url = `http://127.0.0.1:${port}`;
      await waitUntilHealthy(`${url}/healthz`);
      const warning = serve.allLines().find((line) => line.includes('no randomness beacon reachable'));
      expect(warning, serve.output()).toBeDefined();
      expect(JSON.parse(warning!)).toMatchObject({ level: 40, beacon: `http://127.0.0.1:${nobody}/chain` });
      const created = await call('POST', `${url}/api/sales`, 'admin', {
        body: {
          name: 'raffle without a beacon',
          stock: 1,
          admission: 'raffle',
          drawAt: new Date(Date.now() + 3_600_000).toISOString(),
        },
      });
      expect(created.status).toBe(201);
      const entry = await call<{ receipt: { payload: { commitment: { beacon: unknown } } } }>(
        'POST',
        `${url}/api/sales/${String(created.body.id)}/raffle/entries`,
        'someone',
      );
      expect(entry.status).toBe(202);
      expect(entry.body.receipt.payload.commitment.beacon).toBeNull();
    } finally {
      serve.kill();
      await serve.exited;
    }
  });
});
