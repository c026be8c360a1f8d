/**
 * `lockstock/mysql` — the lock API on MySQL's and MariaDB's user locks, GET_LOCK (driver: `mysql2`, an
 * optional peer dependency loaded when a client is made). MySqlLockClient offers mutex, reentrant,
 * fair, spin and semaphore locks held by pinned connections, and elections. Lock names map to
 * server-side names by serverName (names.ts): case-safe, at most 64 characters, long or mixed-case
 * names hashed.
 *
 * @module lockstock/mysql
 */
export { MySqlLockClient, type MySqlLockClientOptions } from './client.js';
export { MySqlBackend, type MySqlBackendOptions } from './backend.js';
export { MySqlSessionError } from './errors.js';
export { lockName as mysqlLockName, serverName as mysqlServerName } from './names.js';
