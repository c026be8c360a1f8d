import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { RedisServer } from '@lockstock/servers';
import { admissionRestore } from '../../src/sale/admission/restore.js';
import type { RebuildCause } from '../../src/sale/recovery/inspect.js';
import { RecoveryMonitor } from '../../src/sale/recovery/monitor.js';
import { roomKeys } from '../../src/sale/room/keys.js';
import { layoutKey, layoutKeys, layoutOf, type PartKeys } from '../../src/sale/shards/layout.js';
import type { NewSale, SaleView } from '../../src/sale/types.js';
import { useClusterSaleStack } from '../helpers/cluster-sale.js';

// A split sale's waiting room on a Redis Cluster: the room lives on the sale's own slot, its parts on
// others (one per master, placement.ts), so Redis can lose the room with a part, or alone.
const env = useClusterSaleStack(3);
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
});
