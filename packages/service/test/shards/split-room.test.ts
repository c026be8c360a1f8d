import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { RedisServer } from '@lockstock/servers';
import { admissionRestore } from '../../src/sale/admission/restore.js';
import { SaleRecoveringError } from '../../src/sale/recovering.js';
import type { RebuildCause } from '../../src/sale/recovery/inspect.js';
import { RecoveryMonitor } from '../../src/sale/recovery/monitor.js';
import { roomKeys } from '../../src/sale/room/keys.js';
import { generateServiceKey } from '../../src/sale/store/signing-key.js';
import { WaitingRoom, type RoomRefusal, type RoomStanding } from '../../src/sale/room/room.js';
import { layoutKey, layoutKeys, layoutOf, partOfUser, type PartKeys } from '../../src/sale/shards/layout.js';
import type { SaleService } from '../../src/sale/service.js';
import type { NewSale, SaleView } from '../../src/sale/types.js';
import { useClusterSaleStack } from '../helpers/cluster-sale.js';
import { until } from '../helpers/until.js';

// A split sale's waiting room on a Redis Cluster: the room lives on the sale's own slot, its parts on
// others (one per master, placement.ts), so Redis can lose the room with a part, or alone.
const env = useClusterSaleStack(3);
const SECRET = 'split-room-secret-0123456789abcdef';
/** The service's one signing key (store/signing-key.ts), shared by every process, as on one record. */
const KEY = generateServiceKey();
/** Admits at once from the end of a 1 s shuffle window, with no notice. */
const ROOM = { ratePerSec: 1000, noticeSeconds: 0, shuffleSeconds: 1 };

const partsOf = (sale: SaleView): PartKeys[] => layoutKeys(layoutOf(sale.id, sale.partTags));

async function masterOfKey(key: string): Promise<RedisServer> {
  return env.cluster.masterOf(Number(await env.redis.call('CLUSTER', 'KEYSLOT', key)));
}

/**
 * A split sale (2 parts on 3 masters) whose own slot — its room and its layout key — is on the master
 * that holds none of its parts (1 sale in 3 is; sales are made until one is).
 */
async function saleWithRoomApart(room: NonNullable<NewSale['room']>): Promise<SaleView> {
  for (let tries = 0; tries < 60; tries++) {
    const sale = await env.service.createSale({ name: 'room apart', stock: 10, shards: 2, room });
    const roomMaster = (await masterOfKey(roomKeys(sale.id).config)).port;
    const partMasters = await Promise.all(partsOf(sale).map(async (k) => (await masterOfKey(k.stock)).port));
    if (!partMasters.includes(roomMaster)) return sale;
  }
  throw new Error('no sale with its room on a master without parts in 60 tries');
}

/** What a master that restarted empty lost of a sale: every key of the sale it held. */
async function loseOn(master: RedisServer, saleId: string): Promise<string[]> {
  const node = new Redis(master.url);
  try {
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, found] = await node.scan(cursor, 'MATCH', `*{sale:${saleId}[}:]*`, 'COUNT', 1000);
      keys.push(...found);
      cursor = next;
    } while (cursor !== '0');
    for (const key of keys) await node.del(key); // one at a time: they sit on several slots
    return keys;
  } finally {
    node.disconnect();
  }
}

/** A recovery monitor's start-up check of every open sale (rebuilds what needs it), then stopped. */
async function recover(): Promise<Array<{ saleId: string; why: RebuildCause }>> {
  const rebuilt: Array<{ saleId: string; why: RebuildCause }> = [];
  const monitor = new RecoveryMonitor({
    context: env.context,
    db: env.db,
    admission: admissionRestore(env.context, env.db),
    checkEveryMs: 0,
    onRebuilt: (saleId, why) => rebuilt.push({ saleId, why }),
  });
  await monitor.start();
  await monitor.stop();
  return rebuilt;
}

/** Joins `room` and asks until admitted; the admission's admitted-at (what the purchase carries). */
async function admit(room: WaitingRoom, saleId: string, userId: string): Promise<number> {
  const joined = await room.join(saleId, userId);
  if (!joined.ok) throw new Error(`${userId} could not join: ${joined.code}`);
  let standing: RoomStanding | RoomRefusal = joined;
  await until(
    `${userId} to be admitted`,
    async () => {
      if (standing.ok && standing.state === 'admitted') return true;
      standing = await room.check(saleId, userId, joined.ticket);
      return standing.ok && standing.state === 'admitted';
    },
    30_000,
  );
  return (standing as Extract<RoomStanding, { state: 'admitted' }>).admittedAt;
}

/** HSETs a Redis node has run (its own and its scripts'). */
async function hsets(master: RedisServer): Promise<number> {
  const node = new Redis(master.url);
  try {
    const info = await node.info('commandstats');
    return Number(/cmdstat_hset:calls=(\d+)/.exec(info)?.[1] ?? 0);
  } finally {
    node.disconnect();
  }
}

/** `count` user ids (`prefix` + n) whose purchases go to `part` of a sale of `parts`. */
function usersOf(part: number, parts: number, count: number, prefix: string): string[] {
  const users: string[] = [];
  for (let i = 0; users.length < count; i++) {
    if (partOfUser(`${prefix}${i}`, parts) === part) users.push(`${prefix}${i}`);
  }
  return users;
}

const buy = (service: SaleService, saleId: string, userId: string, admittedAt: number) =>
  service.buy({ saleId, userId, quantity: 1, admittedAt });

describe("a split sale's waiting room when Redis loses it", () => {
  it('a part rebuilt after its master lost it brings the room back (the room sat on that master)', async () => {
    // 3 parts on 3 masters: the room's master holds a part too.
    const sale = await env.service.createSale({
      name: 'room and part lost',
      stock: 30,
      shards: 3,
      room: { ...ROOM, maxActive: 3 },
    });
    const config = await env.redis.hgetall(roomKeys(sale.id).config);
    expect(config).toMatchObject({ rate: '1000', maxActive: '3' });
    const lost = await loseOn(await masterOfKey(roomKeys(sale.id).config), sale.id);
    expect(lost).toContain(roomKeys(sale.id).config);
    expect(lost.some((key) => key.endsWith(':stock'))).toBe(true); // a part went with it

    const rebuilt = await recover();
    expect(rebuilt.filter((r) => r.saleId === sale.id)).toEqual([{ saleId: sale.id, why: 'missing' }]);
    expect(await env.redis.hgetall(roomKeys(sale.id).config)).toEqual(config);
  });

  it("the monitor puts the room back with the layout key when the sale's own master lost them (no part lost)", async () => {
    const sale = await saleWithRoomApart(ROOM);
    const config = await env.redis.hgetall(roomKeys(sale.id).config);
    const lost = await loseOn(await masterOfKey(roomKeys(sale.id).config), sale.id);
    expect(lost.sort()).toEqual(expect.arrayContaining([roomKeys(sale.id).config, layoutKey(sale.id)]));
    expect(lost.some((key) => key.endsWith(':stock'))).toBe(false);

    expect((await recover()).filter((r) => r.saleId === sale.id)).toEqual([]); // no part to rebuild
    expect(await env.redis.get(layoutKey(sale.id))).toBe((sale.partTags ?? []).join(','));
    expect(await env.redis.hgetall(roomKeys(sale.id).config)).toEqual(config);
  });

  it('a room lost alone is put back by the first purchase that finds it gone: one restore per process, then purchases go on', async () => {
    const sale = await saleWithRoomApart(ROOM);
    const second = await env.instance();
    const one = new WaitingRoom(env.context, env.service.rooms, SECRET, KEY);
    const two = new WaitingRoom(second.context, second.service.rooms, SECRET, KEY);
    // Each process learns the room (and remembers it) as its buyers join.
    const ann = await admit(one, sale.id, 'ann');
    const bob = await admit(two, sale.id, 'bob');

    // Redis loses the room's settings alone. Every purchase is refused 503 (never sold without its
    // room); the processes that met the loss put the room back from the record: one restore each,
    // however many purchases found it gone.
    const config = roomKeys(sale.id).config;
    const settings = await env.redis.hgetall(config);
    const roomMaster = await masterOfKey(config);
    await env.redis.del(config);
    const before = await hsets(roomMaster);
    const answers = await Promise.allSettled([
      ...Array.from({ length: 10 }, () => buy(env.service, sale.id, 'ann', ann)),
      ...Array.from({ length: 10 }, () => buy(second.service, sale.id, 'bob', bob)),
    ]);
    for (const answer of answers) {
      expect(answer.status).toBe('rejected');
      expect((answer as PromiseRejectedResult).reason).toBeInstanceOf(SaleRecoveringError);
    }
    expect((await hsets(roomMaster)) - before).toBe(2);
    expect(await env.redis.hgetall(config)).toEqual(settings);

    // The next purchases find the room: each admission buys its order.
    expect(await buy(env.service, sale.id, 'ann', ann)).toMatchObject({ ok: true });
    expect(await buy(second.service, sale.id, 'bob', bob)).toMatchObject({ ok: true });

    // Lost again, the room is found gone by a join: a 503 (not "this sale has no room"), and back.
    await env.redis.del(config);
    await expect(two.join(sale.id, 'cat')).rejects.toBeInstanceOf(SaleRecoveringError);
    expect(await env.redis.hgetall(config)).toEqual(settings);
    expect(await two.join(sale.id, 'cat')).toMatchObject({ ok: true });
  });
});

describe("a split sale's waiting room: capacity", () => {
  it('one active-buyer budget across the parts and the processes: a purchase frees a slot, a refusal keeps it', async () => {
    const sale = await env.service.createSale({
      name: 'capped split',
      stock: 10,
      shards: 2,
      perUserLimit: 1,
      room: { ...ROOM, maxActive: 2 },
    });
    const second = await env.instance();
    const processes = [
      { service: env.service, room: new WaitingRoom(env.context, env.service.rooms, SECRET, KEY) },
      { service: second.service, room: new WaitingRoom(second.context, second.service.rooms, SECRET, KEY) },
    ] as const;
    // Two buyers of each part, one of each on each process, all in the first shuffle window.
    const [a0, b0] = usersOf(0, 2, 2, 'cap');
    const [a1, b1] = usersOf(1, 2, 2, 'cap');
    const buyers = [
      { user: a0 as string, on: processes[0] },
      { user: a1 as string, on: processes[0] },
      { user: b0 as string, on: processes[1] },
      { user: b1 as string, on: processes[1] },
    ];
    const tickets = new Map<string, string>();
    for (const { user, on } of buyers) {
      const joined = await on.room.join(sale.id, user);
      expect(joined).toMatchObject({ ok: true }); // waiting, or admitted if the window ended already
      tickets.set(user, (joined as RoomStanding).ticket);
    }
    const standing = new Map<string, RoomStanding | RoomRefusal>();
    /** Every buyer asks where they stand (each on its own process): the room admits what it may. */
    const askAll = async () => {
      for (const { user, on } of buyers) {
        standing.set(user, await on.room.check(sale.id, user, tickets.get(user) as string));
      }
    };
    const keys = roomKeys(sale.id);
    const admittedNow = async () => env.redis.hgetall(keys.admitted);
    await until(
      'the first window to end and the room to admit',
      async () => {
        await askAll();
        return Object.keys(await admittedNow()).length > 0;
      },
      30_000,
    );
    await askAll();
    await askAll();
    // At 1000/s the pace would admit all four; the cap admits two, whatever their parts.
    const firstTwo = Object.keys(await admittedNow());
    expect(firstTwo).toHaveLength(2);
    expect(await env.redis.zcard(keys.active)).toBe(2);
    const [x, y] = firstTwo as [string, string];
    const admittedAt = async (user: string) => Number((await admittedNow())[user]);
    const other = (user: string) => (buyers.find((b) => b.user === user)?.on === processes[0] ? 1 : 0);

    // X buys (on the other process than it joined on): its slot is free, one more is admitted.
    const xOn = processes[other(x)];
    expect(await buy(xOn.service, sale.id, x, await admittedAt(x))).toMatchObject({ ok: true });
    await askAll();
    expect(Object.keys(await admittedNow())).toHaveLength(3);
    expect(await env.redis.zcard(keys.active)).toBe(2);

    // Y is refused (over the per-user limit): its admission is given back whole, slot included, so
    // the last buyer still waits; Y then buys, and the last buyer is admitted.
    const yOn = processes[other(y)];
    const refused = await yOn.service.buy({
      saleId: sale.id,
      userId: y,
      quantity: 2,
      admittedAt: await admittedAt(y),
    });
    expect(refused).toEqual({ ok: false, code: 'limit_reached' });
    await askAll();
    await askAll();
    expect(Object.keys(await admittedNow())).toHaveLength(3);
    expect(await env.redis.zcard(keys.active)).toBe(2);
    expect(await buy(yOn.service, sale.id, y, await admittedAt(y))).toMatchObject({ ok: true });
    await askAll();
    expect(Object.keys(await admittedNow())).toHaveLength(4);
    expect([...standing.values()].filter((s) => s.ok && s.state === 'waiting')).toEqual([]);
  });

  it('an admission that lapses unspent frees its slot: the next buyer is admitted when it ends, not before', async () => {
    const admissionSeconds = 3;
    const sale = await env.service.createSale({
      name: 'lapsing split',
      stock: 10,
      shards: 2,
      room: { ...ROOM, maxActive: 1, admissionSeconds },
    });
    const room = new WaitingRoom(env.context, env.service.rooms, SECRET, KEY);
    const dee = await admit(room, sale.id, 'dee');
    const joined = await room.join(sale.id, 'eli');
    expect(joined).toMatchObject({ ok: true, state: 'waiting', position: 1 });
    // Eli asks until admitted: only Dee's admission ending (unspent) can free the one slot.
    const eli = await admit(room, sale.id, 'eli');
    expect(eli).toBeGreaterThanOrEqual(dee + admissionSeconds * 1000); // both on the Redis clock
    expect(await buy(env.service, sale.id, 'dee', dee)).toEqual({ ok: false, code: 'admission_expired' });
    expect(await room.stats(sale.id)).toMatchObject({ active: 1, admitted: 2, waiting: 0 });
    expect(await buy(env.service, sale.id, 'eli', eli)).toMatchObject({ ok: true });
  });
});

describe("a split sale's waitlist", () => {
  // Chosen, not built: a unit that comes back to a split sale returns to its own part, where the
  // waitlist (one line on one slot) cannot offer it atomically; the join says so instead of queueing
  // a buyer nobody would serve (docs/service.md, waitlists).
  it('is refused with waitlist_unavailable, sold out or not, and queues nobody', async () => {
    const sale = await env.service.createSale({ name: 'split, no waitlist', stock: 2, shards: 2 });
    expect(await env.service.waitlist.join(sale.id, 'early')).toEqual({
      ok: false,
      code: 'waitlist_unavailable',
    });
    for (const user of ['u1', 'u2', 'u3', 'u4', 'u5', 'u6'])
      await env.service.buy({ saleId: sale.id, userId: user, quantity: 1 });
    expect((await env.service.getSale(sale.id))?.remaining).toBe(0);
    expect(await env.service.waitlist.join(sale.id, 'late')).toEqual({
      ok: false,
      code: 'waitlist_unavailable',
    });
    expect(await env.service.waitlist.standing(sale.id, 'late')).toEqual({ state: 'none' });
  });
});
