import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresServer } from '@lockstock/servers';
import { applyOrders } from '../../src/sale/store/apply-orders.js';
import { pgliteDatabase, postgresDatabase, type Database } from '../../src/sale/store/db.js';
import type { OrderEntry } from '../../src/sale/store/decide.js';
import { migrate } from '../../src/sale/store/migrate.js';

// Orders and holdings refer to their sale without a per-row foreign key (migration 004): these are
// the guarantees that replace it, on both stores the service runs on.
let postgres: PostgresServer;
let pg: Database;
let lite: Database;
const stores: Array<[string, () => Database]> = [
  ['PostgreSQL', () => pg],
  ['PGlite', () => lite],
];

beforeAll(async () => {
  postgres = await PostgresServer.start();
  pg = postgresDatabase(postgres.url);
  lite = await pgliteDatabase();
  await Promise.all([migrate(pg), migrate(lite)]);
});
afterAll(async () => {
  await Promise.all([pg.close(), lite.close()]);
  await postgres.stop();
});

const count = async (db: Database, sql: string) => (await db.query<{ n: number }>(sql)).rows[0]?.n;

describe.each(stores)('the record on %s', (_name, store) => {
  it('never loses a sale that orders refer to: DELETE and TRUNCATE are refused', async () => {
    const db = store();
    const created = await db.query<{ id: string }>(
      `INSERT INTO sales (name, stock, starts_at, ends_at)
       VALUES ('kept', 10, now(), now() + interval '1 hour') RETURNING id::text AS id`,
    );
    const saleId = created.rows[0]?.id as string;
    const entry: OrderEntry = {
      kind: 'reservation',
      saleId,
      streamId: '1-1',
      orderId: '9000000000001',
      userId: 'alice',
      quantity: 1,
      reservedAtMs: Date.now(),
    };
    expect((await applyOrders(db, [entry], { fresh: true })).map((d) => d.outcome)).toEqual(['confirmed']);
    const sales = await count(db, 'SELECT count(*)::int AS n FROM sales');
    for (const statement of [`DELETE FROM sales WHERE id = ${saleId}`, 'TRUNCATE sales CASCADE']) {
      await expect(db.query(statement)).rejects.toMatchObject({ code: '23001' });
    }
    expect(await count(db, 'SELECT count(*)::int AS n FROM sales')).toBe(sales);
  });

  it('writes nothing for an entry of a sale it does not have', async () => {
    const db = store();
    const before = await count(
      db,
      'SELECT (SELECT count(*) FROM orders) + (SELECT count(*) FROM purchases) AS n',
    );
    const entry: OrderEntry = {
      kind: 'reservation',
      saleId: '987654321',
      streamId: '1-2',
      orderId: '9000000000002',
      userId: 'bob',
      quantity: 1,
      reservedAtMs: Date.now(),
    };
    const decisions = await applyOrders(db, [entry], { fresh: true });
    expect(decisions.map((d) => d.outcome)).toEqual(['unknown_sale']);
    expect(
      await count(db, 'SELECT (SELECT count(*) FROM orders) + (SELECT count(*) FROM purchases) AS n'),
    ).toBe(before);
  });
});
