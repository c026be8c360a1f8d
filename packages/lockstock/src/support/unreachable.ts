import { brandedInstanceOf, SPI_BRAND, SPI_VERSION } from './brand.js';
/**
 * The error a backend throws when it cannot reach its server. It lives at the bottom layer because
 * the Redis plumbing reports it as well as the backends; locks/errors.ts re-exports it and wraps it as
 * LockConnectionError for lock calls.
 */

/** What each connection error code means, and what to check. */
const CONNECTION_HINTS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'the connection was refused: is the server running, and listening on that port?',
  ENOTFOUND: 'the host name does not resolve: is it spelled right?',
  EAI_AGAIN: 'the host name could not be resolved (DNS did not answer)',
  ETIMEDOUT: 'the connection timed out: is the host up, and the port open to this machine?',
  EHOSTUNREACH: 'the host is unreachable from this machine',
  ENETUNREACH: 'the network is unreachable from this machine',
  ECONNRESET:
    'the server closed the connection: does a server of that kind listen there (not another protocol, nor TLS where plain was expected)?',
  EPIPE: 'the server closed the connection',
};

/** The connection codes CONNECTION_HINTS explains (what `connectionCode` looks for). */
const CONNECTION_CODES = new Set(Object.keys(CONNECTION_HINTS));

/**
 * The connection error code (ECONNREFUSED, ENOTFOUND...) of `error` or of an error in its cause
 * chain or among an AggregateError's errors (Node's happy eyeballs), if it has one.
 */
export function connectionCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && CONNECTION_CODES.has(code)) return code;
    const inner = (e as { errors?: unknown }).errors;
    if (Array.isArray(inner)) {
      const found = inner.map(connectionCode).find(Boolean);
      if (found) return found;
    }
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * What a backend throws when it cannot reach its server (a refused connection, a host name that does
 * not resolve, no connection within its connect timeout). It names no lock: lock calls wrap it as a
 * LockConnectionError naming the lock (see backendError). Exported for backends (`lockstock/backend`).
 */
export class BackendUnreachableError extends Error {
  override readonly name = 'BackendUnreachableError';
  /** Recognises this error of another copy of lockstock too (same SPI version): see brand.ts. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return brandedInstanceOf(this, value);
  }
  constructor(
    /** The backend's name, as LockBackend.name: 'redis', 'zookeeper', 'etcd'... */
    readonly backend: string,
    /** Where it was looked for: host:port, several comma-separated, a socket path; never credentials. */
    readonly address: string,
    /** The connection error code (ECONNREFUSED, ENOTFOUND, ETIMEDOUT...), when one is known. */
    readonly errorCode: string | undefined,
    /** What happened besides the code, or instead of one (e.g. "disconnected for 10002 ms"); may be ''. */
    readonly detail: string,
    options?: ErrorOptions,
  ) {
    super('', options);
    this.message = `cannot reach ${this.describe()}`;
  }

  /** "ZooKeeper at 127.0.0.1:2181 (ECONNREFUSED: the connection was refused: ...); disconnected for 2001 ms". */
  describe(): string {
    const server = SERVER_NAMES[this.backend] ?? this.backend;
    const hint = this.errorCode && CONNECTION_HINTS[this.errorCode];
    if (!hint)
      return `${server} at ${this.address} (${[this.errorCode, this.detail].filter(Boolean).join(': ')})`;
    return `${server} at ${this.address} (${this.errorCode}: ${hint})${this.detail ? `; ${this.detail}` : ''}`;
  }
}
Object.defineProperty(BackendUnreachableError.prototype, SPI_BRAND, { value: SPI_VERSION });

const SERVER_NAMES: Readonly<Record<string, string>> = {
  redis: 'Redis',
  redlock: 'Redis',
  zookeeper: 'ZooKeeper',
  etcd: 'etcd',
  postgres: 'PostgreSQL',
  mysql: 'MySQL',
};
