/**
 * One line for a dependency this command cannot reach at start: which server, which address, what
 * to do — instead of a driver's stack traces and retry messages.
 */

/** Errors that mean "nothing answered there", by Node's and the drivers' codes. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
  'EPIPE',
]);

/** The code of `error` or of an error in its cause chain (AggregateError included), if it is one. */
export function connectionCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && CONNECTION_CODES.has(code)) return code;
    // An error that crossed a thread or a wrapper keeps only its message ("connect ECONNREFUSED ...").
    const named = /\b(E[A-Z_]+)\b/.exec(String((e as { message?: unknown }).message ?? ''))?.[1];
    if (named && CONNECTION_CODES.has(named)) return named;
    const inner = (e as { errors?: unknown[] }).errors;
    if (Array.isArray(inner)) {
      const found = inner.map(connectionCode).find(Boolean);
      if (found) return found;
    }
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** host:port of a URL, never its credentials. */
export function addressOf(url: string): string {
  try {
    const parsed = new URL(url.replace(/^redis-cluster:\/\//, 'redis://').split(',')[0] ?? url);
    return parsed.port ? `${parsed.hostname}:${parsed.port}` : parsed.hostname;
  } catch {
    return 'the configured address';
  }
}

export class UnreachableError extends Error {
  constructor(what: 'Redis' | 'PostgreSQL', url: string, code: string, hint: string) {
    super(`cannot reach ${what} at ${addressOf(url)} (${code}): ${hint}`);
  }
}

export const HINTS = {
  Redis:
    'is redis-server running there? Check REDIS_URL (--redis), or leave it unset and lockstock starts a private one',
  PostgreSQL:
    'is PostgreSQL running there? Check DATABASE_URL (--database), or leave it unset and lockstock keeps orders in its embedded record',
} as const;

/** The URL schemes each server is reached by (a Redis URL without `scheme://` is ioredis's own). */
const SCHEMES = {
  Redis: ['redis', 'rediss', 'redis-cluster'],
  PostgreSQL: ['postgres', 'postgresql', 'socket'],
} as const;

const SETTINGS = {
  Redis: {
    name: 'REDIS_URL (--redis)',
    unset: 'leave it unset and lockstock starts a private redis-server',
  },
  PostgreSQL: {
    name: 'DATABASE_URL (--database)',
    unset: 'leave it unset and lockstock keeps orders in its embedded record',
  },
} as const;

/** A URL given for `what` with another server's scheme (mysql:// for PostgreSQL, http:// for Redis). */
export class WrongSchemeError extends Error {
  constructor(what: 'Redis' | 'PostgreSQL', scheme: string) {
    const accepted = SCHEMES[what].filter((s) => s !== 'socket').map((s) => `${s}://`);
    const list = `${accepted.slice(0, -1).join(', ')} or ${accepted.at(-1)}`;
    super(
      `${SETTINGS[what].name} is ${/^(?:[aeiou]|http)/i.test(scheme) ? 'an' : 'a'} ${scheme}:// URL, but lockstock needs ${what} there: give a ${list} URL, or ${SETTINGS[what].unset}`,
    );
  }
}

/** Throws WrongSchemeError when `url` names a scheme `what` is not reached by; never shows the URL itself. */
export function assertScheme(what: 'Redis' | 'PostgreSQL', url: string | undefined): void {
  const scheme = url && /^([a-z][a-z0-9+.-]*):\/\//i.exec(url.trim())?.[1]?.toLowerCase();
  if (scheme && !(SCHEMES[what] as readonly string[]).includes(scheme))
    throw new WrongSchemeError(what, scheme);
}
