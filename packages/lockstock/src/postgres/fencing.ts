import type { PoolClient } from './driver.js';
import { sqlState } from './errors.js';
import { SQL } from './sql.js';

/** Where fencing tokens come from. */
export interface SequenceName {
  /** Its schema; undefined: the connection's current schema. */
  readonly schema: string | undefined;
  readonly name: string;
}

/** The default sequence: the same as PostgresTokenSource's, so Redlock's and these tokens never repeat. */
export const DEFAULT_SEQUENCE = 'lockstock_fencing_tokens';

/**
 * Resolves the fencing-token sequence to its server-quoted name and creates it if it is missing (a
 * role without CREATE needs it made once by one with it; present, it is only read). Concurrent
 * creators: CREATE SEQUENCE IF NOT EXISTS can still fail on the catalog's unique index when another
 * session creates it at the same moment — the sequence exists then, which is all that is needed.
 */
export async function prepareSequence(client: PoolClient, sequence: SequenceName): Promise<string> {
  const { rows } = await client.query<{ qualified: string; present: boolean }>(SQL.sequenceName, [
    sequence.schema ?? null,
    sequence.name,
  ]);
  const qualified = rows[0]?.qualified;
  if (qualified === undefined) throw new Error('the fencing sequence could not be named');
  if (rows[0]?.present) return qualified;
  try {
    await client.query(SQL.sequenceCreate.replaceAll('{{sequence}}', () => qualified));
  } catch (error) {
    const code = sqlState(error);
    if (code !== '23505' && code !== '42P07') throw error; // unique_violation, duplicate_table
  }
  return qualified;
}
