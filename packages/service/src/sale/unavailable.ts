/**
 * Telling "a dependency is down" apart from "our code failed": the first is a 503 the client may
 * retry, the second a 500 and a bug. One classification, used by the HTTP error handler, the health
 * check and the metrics, so the three never disagree.
 */

/** What the service depends on: Redis (stock, reservations, limits, order ids) and the record. */
export type Dependency = 'redis' | 'database';

/**
 * A dependency could not be reached or refused service for now (connection refused, reset or
 * dropped, server shutting down or starting up, command timed out). Carries the original error as
 * `cause` and its `code` (an SQLSTATE or a system error code) when it had one, so code that sorts
 * errors by code (the pipeline's retry decision) sees through it.
 */
export class DependencyUnavailableError extends Error {
  override readonly name: string = 'DependencyUnavailableError';
  readonly code: string;

  constructor(
    readonly dependency: Dependency,
    cause: unknown,
  ) {
    super(`${dependency} is unavailable: ${messageOf(cause)}`, { cause });
    const code = (cause as { code?: unknown } | undefined)?.code;
    this.code = typeof code === 'string' ? code : 'ERR_DEPENDENCY_UNAVAILABLE';
  }
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** System error codes of a connection that could not be made or was lost. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
]);

/**
 * PostgreSQL: SQLSTATE class 08 (connection exception), 53 (insufficient resources: too many
 * connections, out of memory or disk), 57P01-57P05 (admin or crash shutdown, cannot connect now,
 * database dropped, idle session timeout) — and node-postgres's own messages for a connection that
 * ended or could not be had from the pool in time.
 */
const PG_SQLSTATE = /^(08|53|57P0[1-5])/;
const PG_MESSAGES =
  /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect|Query read timeout)/;

/** The database's errors that mean "unavailable" (everything else is the query's own problem). */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (error instanceof DependencyUnavailableError) return error.dependency === 'database';
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && (CONNECTION_CODES.has(code) || PG_SQLSTATE.test(code))) return true;
  return PG_MESSAGES.test(messageOf(error));
}

/** ioredis's errors for a connection that is down or a command that got no answer in time. */
const IOREDIS_NAMES = new Set(['MaxRetriesPerRequestError', 'ClusterAllFailedError']);
const IOREDIS_MESSAGES =
  /^(Connection is closed|Stream isn't writeable|Command timed out|None of startup nodes is available|Failed to refresh slots cache)/;
/** Redis replies that mean "not now": loading the dataset, busy script, no master, cluster down... */
const REDIS_REPLIES = /^(LOADING|BUSY|MASTERDOWN|READONLY|CLUSTERDOWN|TRYAGAIN|NOREPLICAS|MISCONF|OOM) /;

export function isRedisUnavailable(error: unknown): boolean {
  if (error instanceof DependencyUnavailableError) return error.dependency === 'redis';
  const { name } = (error ?? {}) as { name?: unknown };
  if (typeof name !== 'string') return false;
  // Order ids need a worker id leased from Redis; without one, Redis is the reason.
  if (IOREDIS_NAMES.has(name) || name === 'IdGeneratorUnavailableError') return true;
  const message = messageOf(error);
  if (name === 'ReplyError') return REDIS_REPLIES.test(message);
  return IOREDIS_MESSAGES.test(message);
}

/**
 * Which dependency an error says is unavailable, or undefined for any other error. A bare system
 * error (ECONNREFUSED with no wrapper) is unavailability too, but of something unnamed (`other`): the
 * database layer wraps its own errors, and ioredis never hands one to a command.
 */
export function unavailableDependency(error: unknown): Dependency | 'other' | undefined {
  if (error instanceof DependencyUnavailableError) return error.dependency;
  if (isRedisUnavailable(error)) return 'redis';
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && CONNECTION_CODES.has(code)) return 'other';
  if (isDatabaseUnavailable(error)) return 'database';
  return undefined;
}
