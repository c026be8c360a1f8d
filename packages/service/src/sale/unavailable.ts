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

/**
 * ioredis's own error classes for a connection that is down: the per-request retry budget spent
 * while reconnecting, every Cluster node failing the slots refresh. Order ids need a worker id
 * leased from Redis; without one (IdGeneratorUnavailableError), Redis is the reason too.
 */
const UNAVAILABLE_CLASSES = new Set([
  'MaxRetriesPerRequestError',
  'ClusterAllFailedError',
  'IdGeneratorUnavailableError',
]);

/**
 * Redis replies that mean "not now": loading the dataset, a busy script, no master (a replica cut
 * off from it, or written to during a failover), the cluster down or a slot moving (MOVED and ASK
 * reach the caller only when a failover keeps moving it), too few replicas, a failed save, no memory.
 */
const UNAVAILABLE_REPLIES =
  /^(LOADING|BUSY|MASTERDOWN|READONLY|CLUSTERDOWN|TRYAGAIN|MOVED|ASK|NOREPLICAS|MISCONF|OOM|UNBLOCKED)\b/;

/**
 * ioredis reports a lost connection, a command with no answer in time and a Cluster or Sentinel it
 * cannot reach as plain `Error`s: the message is all it gives, so these are matched only on errors of
 * that plain class, never on a reply or an error of the service's own. Single server: the connection
 * closed or not writeable, the command or the socket timed out, the ready check failed. Cluster: the
 * same per node, plus "Cluster is disconnected", "isn't ready", no startup node or slots, and "Too
 * many Cluster redirections" — ioredis retries a command only on MOVED, ASK, TRYAGAIN, CLUSTERDOWN and
 * a closed connection, so running out of redirections means the cluster did not settle in time,
 * whatever the last error was. Sentinel: every sentinel unreachable.
 */
const IOREDIS_CONNECTION_MESSAGES = new RegExp(
  [
    'Connection is closed',
    "Stream isn't writeable",
    'Command timed out',
    'Socket timeout',
    'connect ETIMEDOUT',
    'Ready check failed',
    'None of startup nodes is available',
    'Failed to refresh slots cache',
    'Cluster is disconnect',
    "Cluster isn't ready",
    'Node is disconnected',
    'Too many Cluster redirections',
    'All sentinels are unreachable',
  ]
    .map((text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('|'),
);

/** How deep a chain of causes is followed (a wrapper of a wrapper of the driver's error). */
const MAX_CAUSE_DEPTH = 5;

/**
 * Whether an error means Redis is unavailable, judged by what the error is — its class, its reply,
 * its system code — and by what it wraps: `cause` (a lockstock error around a driver error, say),
 * ioredis's `lastNodeError`, an AggregateError's `errors`. Never by a message prefix alone.
 */
export function isRedisUnavailable(error: unknown): boolean {
  return redisUnavailable(error, 0);
}

function redisUnavailable(error: unknown, depth: number): boolean {
  if (depth > MAX_CAUSE_DEPTH || typeof error !== 'object' || error === null) return false;
  if (error instanceof DependencyUnavailableError) return error.dependency === 'redis';
  const { name, cause, lastNodeError, errors } = error as {
    name?: unknown;
    cause?: unknown;
    lastNodeError?: unknown;
    errors?: unknown;
  };
  if (typeof name === 'string') {
    if (UNAVAILABLE_CLASSES.has(name)) return true;
    const message = messageOf(error);
    if (name === 'ReplyError') return UNAVAILABLE_REPLIES.test(message);
    if (name === 'Error' && IOREDIS_CONNECTION_MESSAGES.test(message)) return true;
  }
  const wrapped = [cause, lastNodeError, ...(Array.isArray(errors) ? (errors as unknown[]) : [])];
  return wrapped.some((inner) => inner !== undefined && redisUnavailable(inner, depth + 1));
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
