import { DEFAULT_KEY_PREFIX, loadLuaScript, ScriptRunner } from 'lockstock/redis';
import { ID_PATTERN, saleKeys, type SaleKeys } from './keys.js';
import type { RefusalCode, Reservation } from './types.js';
import type { SaleRedis } from './redis.js';

const reserveScript = loadLuaScript(new URL('./reserve.lua', import.meta.url));
const reserveIdempotentScript = loadLuaScript(new URL('./reserve-idempotent.lua', import.meta.url));

/** The reservation scripts' refusal codes, in one place. */
const REFUSALS: Record<number, RefusalCode> = {
  [-1]: 'not_found',
  [-2]: 'not_started',
  [-3]: 'ended',
  [-4]: 'sold_out',
  [-5]: 'limit_reached',
  [-6]: 'idempotency_key_reused',
};

/** A reservation request. Ids must match ID_PATTERN (the caller validates user input first). */
export interface ReserveRequest {
  saleId: string;
  userId: string;
  quantity: number;
  idempotencyKey?: string;
}

/** How long an Idempotency-Key is remembered. */
export const IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;

/**
 * The reservation hot path: one script call, no lock. `nextOrderId` must not cost a round trip
 * (SnowflakeIdGenerator). Key lists are built once per sale.
 */
export class Reserver {
  private readonly scripts: ScriptRunner;
  private readonly keysBySale = new Map<string, { keys: SaleKeys; list: string[] }>();

  constructor(
    redis: SaleRedis,
    private readonly nextOrderId: () => string,
    private readonly keyPrefix = DEFAULT_KEY_PREFIX,
  ) {
    this.scripts = new ScriptRunner(redis);
  }

  private keysOf(saleId: string) {
    let entry = this.keysBySale.get(saleId);
    if (!entry) {
      if (this.keysBySale.size >= 1024) this.keysBySale.clear();
      const keys = saleKeys(saleId, this.keyPrefix);
      entry = { keys, list: [keys.meta, keys.notBefore, keys.open, keys.buyers, keys.stream] };
      this.keysBySale.set(saleId, entry);
    }
    return entry;
  }

  async reserve(request: ReserveRequest): Promise<Reservation> {
    const { saleId, userId, quantity, idempotencyKey } = request;
    if (!ID_PATTERN.test(saleId) || !ID_PATTERN.test(userId)) throw new TypeError('invalid sale or user id');
    if (!Number.isSafeInteger(quantity) || quantity < 1)
      throw new TypeError('quantity must be a positive integer');
    const { keys, list } = this.keysOf(saleId);
    let reply: [number, string?];
    if (idempotencyKey === undefined) {
      reply = (await this.scripts.run(reserveScript, list, [
        userId,
        quantity,
        this.nextOrderId(),
      ])) as typeof reply;
    } else {
      if (!ID_PATTERN.test(idempotencyKey)) throw new TypeError('invalid idempotency key');
      reply = (await this.scripts.run(
        reserveIdempotentScript,
        [...list, keys.idempotency(userId, idempotencyKey)],
        [userId, quantity, this.nextOrderId(), IDEMPOTENCY_TTL_SECONDS],
      )) as typeof reply;
    }
    const [code, orderId] = reply;
    if (code === 1 || code === 2) return { ok: true, orderId: String(orderId), duplicate: code === 2 };
    const refusal = REFUSALS[code];
    if (!refusal) throw new Error(`unexpected reservation script reply ${JSON.stringify(reply)}`);
    return { ok: false, code: refusal };
  }
}
