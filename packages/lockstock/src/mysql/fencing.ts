import type { Pool } from './driver.js';
import { fill, SQL } from './sql.js';

/** The default fencing table, in the connection's database. */
export const DEFAULT_FENCING_TABLE = 'lockstock_fencing';

/** `table` or `database.table`, each part 1–64 of [A-Za-z0-9_$]: quoted with backticks, never escaped. */
const IDENTIFIER = /^[A-Za-z0-9_$]{1,64}(\.[A-Za-z0-9_$]{1,64})?$/;

export const validTableName = (value: unknown): value is string =>
  typeof value === 'string' && IDENTIFIER.test(value);

export const quoteTable = (table: string): string =>
  table
    .split('.')
    .map((part) => `\`${part}\``)
    .join('.');

/** The statements that name the fencing table, filled with it. */
export function fencingStatements(quoted: string) {
  return {
    tryLock: fill(SQL.tryLock, { table: quoted }),
    tryLockRecorded: fill(SQL.tryLockRecorded, { table: quoted }),
    drawToken: fill(SQL.drawToken, { table: quoted }),
    drawTokenRecorded: fill(SQL.drawTokenRecorded, { table: quoted }),
    leader: fill(SQL.leader, { table: quoted }),
  };
}

/**
 * Creates the fencing table if it is missing (a user without CREATE needs it made once by one with
 * it; present, CREATE TABLE IF NOT EXISTS changes nothing) and tells MariaDB from MySQL.
 */
export async function prepareServer(control: Pool, quoted: string): Promise<{ mariadb: boolean }> {
  await control.query(fill(SQL.createFencingTable, { table: quoted }));
  const [rows] = await control.query(SQL.serverFlavor);
  const version = String((rows as Array<{ version?: unknown }>)[0]?.version ?? '');
  return { mariadb: /mariadb/i.test(version) };
}
