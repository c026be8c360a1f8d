import { readAsset } from '../../support/assets.js';
import { assertFence, type Fence, type FencedClaim, type FencedStore } from './fence.js';

const schemaSql = readAsset(new URL('./postgres-fenced-schema.sql', import.meta.url));
const writeSql = readAsset(new URL('./postgres-fenced-write.sql', import.meta.url));
const claimSql = readAsset(new URL('./postgres-fenced-claim.sql', import.meta.url));

/** Anything with pg's `query` (a Pool, a Client, a PoolClient inside a transaction). */
export interface Queryable {
  /** Runs one SQL statement with `$1`-style `values`; resolves with its rows and row count. */
  query(
    text: string,
    values?: unknown[],
  ): Promise<{ rows: Record<string, unknown>[]; rowCount: number | null }>;
}

/**
 * A JSON value store in PostgreSQL that rejects stale writers by (token, owner): the guarded write
 * that makes a lease lock safe when its holder pauses past the lease.
 */
export class PostgresFencedStore<V = unknown> implements FencedStore<V> {
  constructor(private readonly db: Queryable) {}

  /** Creates the table if it does not exist. */
  async migrate(): Promise<void> {
    await this.db.query(schemaSql);
  }

  async write(key: string, value: V, fence: Fence): Promise<boolean> {
    assertFence(fence);
    const result = await this.db.query(writeSql, [
      key,
      JSON.stringify(value),
      fence.fencingToken,
      fence.owner,
    ]);
    return result.rowCount === 1;
  }

  /** A key claimed but never written reads as null (the row holds JSON null). */
  async claim(key: string, fence: Fence): Promise<FencedClaim<V>> {
    assertFence(fence);
    const result = await this.db.query(claimSql, [key, fence.fencingToken, fence.owner]);
    if (result.rowCount !== 1) return { granted: false };
    return { granted: true, value: (result.rows[0]?.value ?? undefined) as V | undefined };
  }

  async read(key: string): Promise<V | undefined> {
    const result = await this.db.query('SELECT value FROM lockstock_fenced_values WHERE key = $1', [key]);
    return result.rows[0]?.value as V | undefined;
  }
}
