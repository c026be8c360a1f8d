import { loadLuaScript, type ScriptRunner } from 'lockstock/redis';
import type { SaleRedis } from '../redis.js';
import { RoomMissingError } from '../recovering.js';
import { partOfUser, type PartKeys } from '../shards/layout.js';
import type { RefusalCode, Reservation } from '../types.js';
import { roomKeys } from './keys.js';

const spendScript = loadLuaScript(new URL('./lua/spend.lua', import.meta.url));

const REFUSALS: Record<number, RefusalCode> = {
  [-9]: 'admission_used',
  [-10]: 'admission_not_yet',
  [-11]: 'admission_expired',
};
const ROOM_MISSING = -12;

/**
 * A purchase with an admission in a split sale. Its parts live on other Cluster slots than its room,
 * so the admission cannot be spent in the reservation's own step (reserve-admitted.lua does that for
 * a sale of one part): it is spent first (lua/spend.lua, on the Redis clock), and given back when the
 * reservation is refused or fails. A crash in between leaves it spent: the buyer joins again, and no
 * admission ever buys two orders. A retry with an Idempotency-Key whose order exists goes straight to
 * the reservation, which answers that order (so a retry after the admission was spent still gets it).
 */
export class AdmittedSplitPurchase {
  constructor(
    private readonly redis: SaleRedis,
    private readonly scripts: ScriptRunner,
    private readonly keyPrefix: string,
  ) {}

  async reserve(
    request: { saleId: string; userId: string; idempotencyKey?: string; admittedAt?: number },
    parts: readonly PartKeys[],
    reserve: () => Promise<Reservation>,
  ): Promise<Reservation> {
    const { saleId, userId, idempotencyKey } = request;
    if (idempotencyKey !== undefined) {
      const part = parts[partOfUser(userId, parts.length)] as PartKeys;
      if ((await this.redis.exists(part.idempotency(userId, idempotencyKey))) === 1) return reserve();
    }
    const room = roomKeys(saleId, this.keyPrefix);
    const keys = [room.config, room.admitted, room.spent, room.active];
    const admittedAt = String(request.admittedAt);
    const spent = Number(await this.scripts.run(spendScript, keys, [userId, admittedAt, 'spend']));
    if (spent === ROOM_MISSING) throw new RoomMissingError(saleId);
    const refusal = REFUSALS[spent];
    if (refusal) return { ok: false, code: refusal };
    const giveBack = (mode = 'return') => this.scripts.run(spendScript, keys, [userId, admittedAt, mode]);
    let result: Reservation;
    try {
      result = await reserve();
    } catch (error) {
      await giveBack().catch(() => undefined); // Redis may be down: the admission then stays spent
      throw error;
    }
    if (!result.ok || result.duplicate) {
      await giveBack(!result.ok && result.code === 'sold_out' ? 'return-idle' : 'return');
    }
    return result;
  }
}
