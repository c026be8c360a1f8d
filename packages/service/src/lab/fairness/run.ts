import { setTimeout as sleep } from 'node:timers/promises';
import { SnowflakeIdGenerator } from '../../sale/ids/snowflake.js';
import { OrderPipeline } from '../../sale/pipeline/order-pipeline.js';
import { RaffleService } from '../../sale/raffle/raffles.js';
import { WaitingRoom } from '../../sale/room/room.js';
import { loadServiceKey } from '../../sale/store/signing-key.js';
import { SaleService } from '../../sale/service.js';
import { labQueries } from '../sql/queries.js';
import type { LabEnv } from '../types.js';

/**
 * The lab's fairness row (issue 39): who gets the units when some buyers are bots that are fast and
 * send many times the requests of a person, under first come first served, the waiting room and the
 * raffle. Every policy runs the same crowd (a fixed seed) on the lab's Redis and PostgreSQL through the
 * sale service's own code, and the units are counted from the record (confirmed orders), not from
 * what the buyers were told.
 */
export interface FairnessOptions {
  /** Buyers in all. @default 1000 */
  buyers?: number;
  /** Units on sale. @default 100 */
  stock?: number;
  /** Share of the buyers that are bots. @default 0.1 */
  botShare?: number;
  /** Requests a bot sends for each one a person sends. @default 10 */
  botFactor?: number;
  /** Seed of the crowd (who is a bot, when people arrive). @default 39 */
  seed?: number;
}

export type FairnessPolicy = 'first come' | 'waiting room' | 'waiting room, capped' | 'raffle';

export interface FairnessRow {
  readonly policy: FairnessPolicy;
  readonly buyers: number;
  readonly bots: number;
  readonly units: number;
  readonly toBots: number;
  /** toBots / units: compare with the bots' share of the buyers. */
  readonly botUnitShare: number;
  readonly botRequests: number;
  readonly humanRequests: number;
  readonly ms: number;
}

interface Buyer {
  readonly id: string;
  readonly bot: boolean;
  /** When the buyer's first request leaves, ms after the sale opens. */
  readonly arrivesMs: number;
}

/** mulberry32: a seeded source of numbers in [0, 1), so a run's crowd is the same every time. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * People press "buy" 150–1,500 ms after the sale opens and try once more 400 ms later if refused;
 * bots fire within 10 ms and retry every 20 ms, `botFactor` times a person's requests.
 */
function crowd(options: Required<FairnessOptions>, runId: string): Buyer[] {
  const random = seeded(options.seed);
  return Array.from({ length: options.buyers }, (_, i) => {
    const bot = random() < options.botShare;
    return {
      id: `${runId}-${bot ? 'bot' : 'person'}-${i}`,
      bot,
      arrivesMs: bot ? Math.floor(random() * 10) : 150 + Math.floor(random() * 1350),
    };
  });
}

const HUMAN_TRIES = 2;

export async function runFairness(env: LabEnv, input: FairnessOptions = {}): Promise<FairnessRow[]> {
  const options: Required<FairnessOptions> = {
    buyers: 1000,
    stock: 100,
    botShare: 0.1,
    botFactor: 10,
    seed: 39,
    ...input,
  };
  const context = env.sale;
  // The room signs admissions with the service's key in the record, as serve does.
  const serviceKey = await loadServiceKey(env.db);
  const ids = new SnowflakeIdGenerator(context);
  await ids.start();
  const service = new SaleService({ context, db: env.db, nextOrderId: () => ids.next() });
  const room = new WaitingRoom(context, service.rooms, `lab-fairness-${Date.now()}-secret`, serviceKey);
  const raffles = new RaffleService({ context, db: env.db, nextOrderId: () => ids.next() });
  const pipeline = new OrderPipeline(context, env.db);
  const deps = { env, options, service, room, raffles, pipeline };
  try {
    return [
      await firstCome(deps),
      await waitingRoom(deps),
      await waitingRoom(deps, { capped: true }),
      await raffle(deps),
    ];
  } finally {
    await pipeline.stop();
    await service.close();
    await ids.stop();
  }
}

interface Deps {
  env: LabEnv;
  options: Required<FairnessOptions>;
  service: SaleService;
  room: WaitingRoom;
  raffles: RaffleService;
  pipeline: OrderPipeline;
}

/** Counts a policy's units from the record: the confirmed orders, once the pipeline has written them. */
async function tally(
  deps: Deps,
  policy: FairnessPolicy,
  saleId: string,
  buyers: Buyer[],
  requests: { bot: number; human: number },
  started: number,
): Promise<FairnessRow> {
  await deps.pipeline.drain();
  const { rows } = await deps.env.pg.query<{ user_id: string }>(labQueries.serviceConfirmedBuyers, [saleId]);
  const bots = new Set(buyers.filter((b) => b.bot).map((b) => b.id));
  const toBots = rows.filter((r) => bots.has(r.user_id)).length;
  return {
    policy,
    buyers: buyers.length,
    bots: bots.size,
    units: rows.length,
    toBots,
    botUnitShare: rows.length === 0 ? 0 : toBots / rows.length,
    botRequests: requests.bot,
    humanRequests: requests.human,
    ms: Math.round(performance.now() - started),
  };
}

/**
 * Every buyer arrives at its time and tries up to its number of tries (a bot `botFactor` times a
 * human's, and faster), counting each request, until `tryOnce` says it is done.
 */
async function crowdTries(
  buyers: Buyer[],
  options: Required<FairnessOptions>,
  requests: { bot: number; human: number },
  tryOnce: (buyer: Buyer) => Promise<boolean>,
): Promise<void> {
  await Promise.all(
    buyers.map(async (buyer) => {
      await sleep(buyer.arrivesMs);
      const tries = buyer.bot ? HUMAN_TRIES * options.botFactor : HUMAN_TRIES;
      for (let i = 0; i < tries; i++) {
        if (i > 0) await sleep(buyer.bot ? 20 : 400);
        requests[buyer.bot ? 'bot' : 'human']++;
        if (await tryOnce(buyer)) return;
      }
    }),
  );
}

async function firstCome(deps: Deps): Promise<FairnessRow> {
  const { options, service } = deps;
  const sale = await service.createSale({ name: 'lab fairness: first come', stock: options.stock });
  const buyers = crowd(options, `fc${sale.id}`);
  const requests = { bot: 0, human: 0 };
  const started = performance.now();
  await crowdTries(buyers, options, requests, async (buyer) => {
    const result = await service.buy({ saleId: sale.id, userId: buyer.id, quantity: 1 });
    return result.ok || result.code === 'limit_reached';
  });
  return tally(deps, 'first come', sale.id, buyers, requests, started);
}

/**
 * The room paced by rate alone, or `capped`: twice the rate, and at most a tenth of the stock admitted
 * and not yet done at once (`maxActive`), people taking 100–600 ms to check out after their admission
 * becomes valid (bots none), so the cap, not the pace, is what holds the crowd back.
 */
async function waitingRoom(deps: Deps, { capped = false } = {}): Promise<FairnessRow> {
  const { options, service, room } = deps;
  // Paced so the whole crowd is admitted in about 3 s; everyone arrives in the first shuffle window
  // (2 s), and admissions start when it ends.
  const ratePerSec = Math.max(1, Math.ceil(options.buyers / 3)) * (capped ? 2 : 1);
  const maxActive = capped ? Math.max(1, Math.ceil(options.stock / 10)) : 0;
  const sale = await service.createSale({
    name: `lab fairness: waiting room${capped ? ', capped' : ''}`,
    stock: options.stock,
    room: { ratePerSec, shuffleSeconds: 2, maxActive },
  });
  const random = seeded(options.seed + 1);
  const buyers = crowd(options, `wr${sale.id}`);
  const requests = { bot: 0, human: 0 };
  const started = performance.now();
  await Promise.all(
    buyers.map(async (buyer) => {
      const count = () => requests[buyer.bot ? 'bot' : 'human']++;
      await sleep(buyer.arrivesMs);
      // A person asks as often as the room says (a little more often); a bot botFactor times as
      // often. Joining again keeps one's one place.
      count();
      let standing = await room.join(sale.id, buyer.id);
      while (standing.ok && standing.state === 'waiting') {
        // Sold out (the page says so): whoever still waits leaves. A capped room would otherwise
        // keep them until the admissions of those who found nothing to buy lapse.
        if (service.refuseFromMemory(sale.id)) return;
        const pause = standing.checkWithinMs * 0.8;
        await sleep(buyer.bot ? pause / options.botFactor : pause);
        count();
        standing = await room.check(sale.id, buyer.id, standing.ticket);
      }
      if (!standing.ok) throw new Error(`waiting room refused ${buyer.id}: ${standing.message}`);
      // Everyone admitted hears of it before it is valid: bots and people buy when it starts (a few
      // ms after: a timer may fire a ms early, and the reservation judges on the Redis clock).
      await sleep(Math.max(0, standing.admissionValidFrom - Date.now()) + 5);
      if (capped && !buyer.bot) await sleep(100 + Math.floor(random() * 500)); // checking out
      count();
      await service.buy({
        saleId: sale.id,
        userId: buyer.id,
        quantity: 1,
        admittedAt: standing.admittedAt, // spent in the reservation, as the HTTP route does
      });
    }),
  );
  return tally(deps, capped ? 'waiting room, capped' : 'waiting room', sale.id, buyers, requests, started);
}

async function raffle(deps: Deps): Promise<FairnessRow> {
  const { options, service, raffles } = deps;
  const now = Date.now();
  const sale = await service.createSale({
    name: 'lab fairness: raffle',
    stock: options.stock,
    admission: 'raffle',
    startsAt: new Date(now),
    drawAt: new Date(now + 60_000),
    endsAt: new Date(now + 120_000),
  });
  const buyers = crowd(options, `rf${sale.id}`);
  const requests = { bot: 0, human: 0 };
  const started = performance.now();
  await crowdTries(buyers, options, requests, async (buyer) => {
    const entered = await raffles.enter(sale.id, buyer.id);
    if (!entered.ok) throw new Error(`raffle refused ${buyer.id}: ${entered.code}`);
    return false; // a repeated entry is a duplicate: bots keep sending theirs
  });
  await raffles.drawNow(sale.id);
  await raffles.serve(sale.id);
  return tally(deps, 'raffle', sale.id, buyers, requests, started);
}
