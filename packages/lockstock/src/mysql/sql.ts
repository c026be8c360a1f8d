import { readAsset } from '../support/assets.js';

/**
 * A statement without its header: the comment lines document the file, and sent with every call they
 * would cost bytes and the server's parser on every lock operation.
 */
const load = (file: string): string =>
  readAsset(new URL(`./sql/${file}`, import.meta.url))
    .split('\n')
    .filter((line) => !line.startsWith('--'))
    .join('\n')
    .trim();

/** Every statement the MySQL backend runs, one .sql file each (each file's header documents it). */
export const SQL = {
  tryLock: load('try-lock.sql'),
  tryLockRecorded: load('try-lock-recorded.sql'),
  drawToken: load('draw-token.sql'),
  drawTokenRecorded: load('draw-token-recorded.sql'),
  tryLockSequence: load('try-lock-sequence.sql'),
  drawTokenSequence: load('draw-token-sequence.sql'),
  waitLock: load('wait-lock.sql'),
  release: load('release.sql'),
  releaseAll: load('release-all.sql'),
  holder: load('holder.sql'),
  connectionId: load('connection-id.sql'),
  waitingQuery: load('waiting-query.sql'),
  waitingConnection: load('waiting-connection.sql'),
  cancelQuery: load('cancel-query.sql'),
  cancelConnection: load('cancel-connection.sql'),
  killConnection: load('kill-connection.sql'),
  createFencingTable: load('create-fencing-table.sql'),
  fencingStart: load('fencing-start.sql'),
  createFencingSequence: load('create-fencing-sequence.sql'),
  leader: load('leader.sql'),
  serverFlavor: load('server-flavor.sql'),
  serverSettings: load('server-settings.sql'),
} as const;

/** A statement with its `{{name}}` slots filled (identifiers already quoted, integers checked). */
export function fill(statement: string, values: Record<string, string | number>): string {
  return statement.replace(/\{\{(\w+)\}\}/g, (_, slot: string) => {
    const value = values[slot];
    if (value === undefined) throw new Error(`no value for {{${slot}}}`);
    if (typeof value === 'number' && !Number.isSafeInteger(value))
      throw new Error(`not an integer: ${value}`);
    return String(value);
  });
}
