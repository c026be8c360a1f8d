import { readAsset } from '../../support/assets.js';
import type { Queryable } from '../../locks/fencing/postgres-fenced-store.js';

const sequenceSql = readAsset(new URL('./token-sequence.sql', import.meta.url));
const nextSql = readAsset(new URL('./token-next.sql', import.meta.url));

/**
 * Where Redlock holds get their fencing tokens. It must be strictly increasing per lock name across
 * every holder, every restart and every failover — which takes a store with consensus or durable
 * transactions. Redlock's masters cannot supply it: a counter on one master goes backwards when that
 * master restarts without persistence (or its replica takes over), and a counter incremented on a
 * majority gives two holders the same number once one master of the majority has forgotten it.
 */
export interface FencingTokenSource {
  /**
   * The next fencing token for a hold of `lockName`: greater than every token it returned before for
   * that name. A rejection fails the attempt: the majority's votes are given back, no hold.
   */
  next(lockName: string): Promise<number>;
}

/**
 * Fencing tokens from one PostgreSQL sequence (durable, monotonic across restarts): strictly
 * increasing for every name, which is all fencing needs (tokens need not be dense per name).
 */
export class PostgresTokenSource implements FencingTokenSource {
  private ready: Promise<unknown> | undefined;

  constructor(private readonly db: Queryable) {}

  /**
   * The sequence's next value (the sequence is created on the first call; a failed creation is tried
   * again on the next). One sequence serves every lock name.
   */
  async next(): Promise<number> {
    this.ready ??= this.db.query(sequenceSql).catch((error: unknown) => {
      this.ready = undefined; // try again next time
      throw error;
    });
    await this.ready;
    const { rows } = await this.db.query(nextSql);
    return Number(rows[0]?.token);
  }
}
