import type { Pool } from './driver.js';
import { fill, SQL } from './sql.js';

/** The default fencing table, in the connection's database. */
export const DEFAULT_FENCING_TABLE = 'lockstock_fencing';

/** The default fencing sequence (MariaDB ≥ 10.3), in the connection's database. */
export const DEFAULT_FENCING_SEQUENCE = 'lockstock_fencing_seq';

/** `table` or `database.table`, each part 1–64 of [A-Za-z0-9_$]: quoted with backticks, never escaped. */
const IDENTIFIER = /^[A-Za-z0-9_$]{1,64}(\.[A-Za-z0-9_$]{1,64})?$/;

export const validTableName = (value: unknown): value is string =>
  typeof value === 'string' && IDENTIFIER.test(value);

export const quoteTable = (table: string): string =>
  table
    .split('.')
    .map((part) => `\`${part}\``)
    .join('.');

/** The statements that name the fencing table or sequence, filled with them (quoted). */
export function fencingStatements(table: string, sequence: string) {
  return {
    tryLock: fill(SQL.tryLock, { table }),
    tryLockRecorded: fill(SQL.tryLockRecorded, { table }),
    tryLockSequence: fill(SQL.tryLockSequence, { sequence }),
    drawToken: fill(SQL.drawToken, { table }),
    drawTokenRecorded: fill(SQL.drawTokenRecorded, { table }),
    drawTokenSequence: fill(SQL.drawTokenSequence, { sequence }),
    leader: fill(SQL.leader, { table }),
  };
}

/** MariaDB has sequences (CREATE SEQUENCE, NEXTVAL) from 10.3; MySQL has none. */
export function hasSequences(version: string): boolean {
  if (!/mariadb/i.test(version)) return false;
  const [major = 0, minor = 0] = (/^(\d+)\.(\d+)/.exec(version) ?? []).slice(1).map(Number);
  return major > 10 || (major === 10 && minor >= 3);
}

export interface ServerFlavor {
  mariadb: boolean;
  /** Tokens of locks that record no holder come from the fencing sequence (else from the table). */
  sequence: boolean;
}

/**
 * Tells MariaDB from MySQL, creates the fencing table if it is missing (a user without CREATE needs it
 * made once by one with it; present, CREATE TABLE IF NOT EXISTS changes nothing), and on MariaDB ≥
 * 10.3 the fencing sequence too, started above every token the table handed out. Elections keep
 * drawing from the table: their grants record the holder in the name's row (leader.sql).
 *
 * Clients of one database must all draw from the sequence or all from the table: a client of an
 * older lockstock still drawing a name's tokens from the table while newer ones use the sequence
 * would interleave two counters (upgrade them together).
 */
export async function prepareServer(control: Pool, table: string, sequence: string): Promise<ServerFlavor> {
  const [rows] = await control.query(SQL.serverFlavor);
  const version = String((rows as Array<{ version?: unknown }>)[0]?.version ?? '');
  await control.query(fill(SQL.createFencingTable, { table }));
  if (!hasSequences(version)) return { mariadb: /mariadb/i.test(version), sequence: false };
  const [starts] = await control.query(fill(SQL.fencingStart, { table }));
  const start = Number((starts as Array<{ start: unknown }>)[0]?.start ?? 1);
  await control.query(fill(SQL.createFencingSequence, { sequence, start }));
  return { mariadb: true, sequence: true };
}
