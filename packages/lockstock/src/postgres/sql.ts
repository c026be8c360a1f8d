import { readAsset } from '../support/assets.js';

const load = (file: string): string => readAsset(new URL(`./sql/${file}`, import.meta.url));

/** Every statement the PostgreSQL backend runs, one .sql file each (each file's header documents it). */
export const SQL = {
  tryLock: load('try-lock.sql'),
  tryXactLock: load('try-xact-lock.sql'),
  waitLock: load('wait-lock.sql'),
  waitXactLock: load('wait-xact-lock.sql'),
  unlock: load('unlock.sql'),
  unlockLabelled: load('unlock-labelled.sql'),
  unlockAll: load('unlock-all.sql'),
  tryPermit: load('try-permit.sql'),
  tryXactPermit: load('try-xact-permit.sql'),
  unlockPermit: load('unlock-permit.sql'),
  notify: load('notify.sql'),
  holders: load('holders.sql'),
  terminateHolders: load('terminate-holders.sql'),
  cancelWait: load('cancel-wait.sql'),
  backendPid: load('backend-pid.sql'),
  sequenceName: load('sequence-name.sql'),
  sequenceCreate: load('sequence-create.sql'),
  transactionLock: load('transaction-lock.sql'),
  transactionTryLock: load('transaction-try-lock.sql'),
  deadlockCheck: load('deadlock-check.sql'),
  deadlockTimeout: load('deadlock-timeout.sql'),
  serverSettings: load('server-settings.sql'),
} as const;

/** The statements that differ between session- and transaction-scoped holds. */
export interface ScopeSql {
  readonly tryLock: string;
  readonly waitLock: string;
  readonly tryPermit: string;
}

export const SCOPE_SQL: Record<'session' | 'transaction', ScopeSql> = {
  session: { tryLock: SQL.tryLock, waitLock: SQL.waitLock, tryPermit: SQL.tryPermit },
  transaction: { tryLock: SQL.tryXactLock, waitLock: SQL.waitXactLock, tryPermit: SQL.tryXactPermit },
};

/**
 * The statements of every acquire and release in scope 'session', run as named prepared statements:
 * parsed and planned once per connection instead of on every call (PostgreSQL's CPU per uncontended
 * pair, measured in docs/benchmarks.md). Never in scope 'transaction': a transaction pooler lends the
 * server connection a statement was prepared on to other clients, and may answer on another.
 */
export const PREPARED: ReadonlyMap<string, string> = new Map([
  [SQL.tryLock, 'lockstock_try_lock'],
  [SQL.unlock, 'lockstock_unlock'],
  [SQL.unlockLabelled, 'lockstock_unlock_labelled'],
]);
