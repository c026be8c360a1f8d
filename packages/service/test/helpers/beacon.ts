import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bls12_381 } from '@noble/curves/bls12-381.js';
import {
  BEACON_DST,
  QUICKNET,
  randomnessOf,
  roundMessage,
  type BeaconChain,
  type BeaconRound,
} from '../../src/sale/raffle/beacon.js';

/**
 * Randomness beacons without a network (issue 44): a real quicknet round recorded from public
 * documentation, a chain whose key the test holds, and a drand relay on loopback.
 */

/**
 * Quicknet round 123, from drand-verify's documentation of
 * https://api3.drand.sh/52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971/public/123.
 */
export const QUICKNET_123: BeaconRound = {
  round: 123,
  signature:
    'b75c69d0b72a5d906e854e808ba7e2accb1542ac355ae486d591aa9d43765482e26cd02df835d3546d23c4b13e0dfc92',
};

/**
 * Quicknet's key with a genesis and period that make round 123 the first after `closesAt`: the
 * recorded round then is the one a raffle closing then fixes (unchained rounds sign their number
 * only, so the real signature holds under the real key).
 */
export function quicknetAt123(closesAt: Date): BeaconChain {
  const period = 86_400;
  const genesisTime = Math.floor(closesAt.getTime() / 1000 - 121.5 * period);
  return { ...QUICKNET, chainHash: 'quicknet-key-test-genesis', genesisTime, period };
}

/** A chain whose key the test holds (an operator's view: any round, signed). Its hash: SHA-256 of its key. */
export function ownChain(): { chain: BeaconChain; sign(round: number): BeaconRound } {
  const bls = bls12_381.shortSignatures;
  const { secretKey, publicKey } = bls.keygen();
  const key = Buffer.from(publicKey.toBytes());
  return {
    chain: {
      chainHash: createHash('sha256').update(key).digest('hex'),
      publicKey: key.toString('hex'),
      genesisTime: 1_700_000_000,
      period: 3,
      scheme: 'bls-unchained-g1-rfc9380',
    },
    sign: (round) => ({
      round,
      signature: Buffer.from(
        bls.sign(bls.hash(roundMessage(round), BEACON_DST), secretKey).toBytes(),
      ).toString('hex'),
    }),
  };
}

/** A chain as drand's `GET <relay>/<chain hash>/info` publishes it (what --trust-chain reads). */
export const chainInfo = (chain: BeaconChain) => ({
  public_key: chain.publicKey,
  period: chain.period,
  genesis_time: chain.genesisTime,
  hash: chain.chainHash,
  groupHash: createHash('sha256').update(chain.publicKey).digest('hex'),
  schemeID: chain.scheme,
  metadata: { beaconID: 'lockstock-test' },
});

interface Waiting {
  readonly seq: number;
  readonly res: ServerResponse;
}

/**
 * A drand relay on loopback: GET <url>/public/<round> from `rounds` (404 while a round is not there),
 * GET <url>/info from `info`. A round can be held: its requests then wait unanswered, in arrival
 * order, until released — so a test can tell apart who asked first (each request has a number).
 */
export class Relay {
  readonly rounds = new Map<number, BeaconRound>();
  info: object | undefined;
  private server?: Server;
  private readonly holding = new Map<number, Waiting[]>();
  private seq = 0;
  private readonly arrivals: Array<() => void> = [];
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const seq = ++this.seq;
      if (/\/info$/.test(req.url ?? '')) {
        if (!this.info) return void res.writeHead(404).end();
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(this.info));
      }
      const round = Number(/\/public\/(\d+)$/.exec(req.url ?? '')?.[1]);
      const waiting = this.holding.get(round);
      if (!waiting) return void this.answer(res, round);
      waiting.push({ seq, res });
      res.once('close', () => {
        const at = waiting.findIndex((w) => w.res === res);
        if (at >= 0) waiting.splice(at, 1); // the client gave up (its timeout)
      });
      for (const arrived of this.arrivals.splice(0)) arrived();
    });
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/chain`;
  }

  /** Requests received so far: a mark for `release(round, after)`. */
  get received(): number {
    return this.seq;
  }

  /** From now on a request for `round` waits, unanswered, until released. */
  hold(round: number): void {
    if (!this.holding.has(round)) this.holding.set(round, []);
  }

  /** Resolves once `count` requests for the held `round` wait. */
  async waiting(round: number, count: number): Promise<void> {
    while ((this.holding.get(round)?.length ?? 0) < count) {
      await new Promise<void>((resolve) => this.arrivals.push(resolve));
    }
  }

  /** Answers (from `rounds`) the requests waiting for `round` received after request number `after`. */
  release(round: number, after = 0): void {
    const waiting = this.holding.get(round) ?? [];
    for (const w of waiting.filter((w) => w.seq > after)) {
      waiting.splice(waiting.indexOf(w), 1);
      this.answer(w.res, round);
    }
  }

  /** Stops holding `round`: every request waiting for it is answered. */
  unhold(round: number): void {
    this.release(round);
    this.holding.delete(round);
  }

  private answer(res: ServerResponse, number: number): void {
    const round = this.rounds.get(number);
    if (!round) return void res.writeHead(404).end();
    const body = { round: round.round, randomness: randomnessOf(round), signature: round.signature };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  async close(): Promise<void> {
    for (const round of [...this.holding.keys()]) this.unhold(round);
    if (!this.server) return;
    const closed = once(this.server, 'close');
    this.server.close();
    this.server.closeAllConnections();
    await closed;
  }
}
