/** Settings of the HTTP service (from the environment, see DESIGN.md). */
export interface HttpConfig {
  /** HS256 secret for bearer tokens (LOCKSTOCK_JWT_SECRET). */
  jwtSecret: string;
  /** Requests per second per user on the order route; 0 = off (LOCKSTOCK_RATE_LIMIT_PER_USER). @default 5 */
  rateLimitPerUser: number;
  /** Requests per second per client address on every route; 0 = off (LOCKSTOCK_RATE_LIMIT_PER_IP). @default 50 */
  rateLimitPerIp: number;
  /** Redis key prefix shared with the locks and the sale keys. @default 'ls' */
  keyPrefix?: string;
}

function rate(name: string, fallback: number, env: NodeJS.ProcessEnv): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0)
    throw new TypeError(`${name} must be a non-negative integer, got "${raw}"`);
  return value;
}

export function httpConfigFromEnv(env: NodeJS.ProcessEnv = process.env, jwtSecret?: string): HttpConfig {
  const secret = jwtSecret ?? env.LOCKSTOCK_JWT_SECRET;
  if (!secret || secret.length < 16) {
    throw new TypeError('LOCKSTOCK_JWT_SECRET must be set to a secret of at least 16 characters');
  }
  return {
    jwtSecret: secret,
    rateLimitPerUser: rate('LOCKSTOCK_RATE_LIMIT_PER_USER', 5, env),
    rateLimitPerIp: rate('LOCKSTOCK_RATE_LIMIT_PER_IP', 50, env),
  };
}
