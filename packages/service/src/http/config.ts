/** Settings of the HTTP service (from the environment, see DESIGN.md). */
export interface HttpConfig {
  /** HS256 secret for bearer tokens (LOCKSTOCK_JWT_SECRET). */
  jwtSecret: string;
  /** Requests per second per user on the order route; 0 = off (LOCKSTOCK_RATE_LIMIT_PER_USER). @default 5 */
  rateLimitPerUser: number;
  /** Requests per second per client address on every route; 0 = off (LOCKSTOCK_RATE_LIMIT_PER_IP). @default 50 */
  rateLimitPerIp: number;
  /**
   * Whether `POST /api/demo/token` hands out tokens for fresh demo buyers (LOCKSTOCK_DEMO=1|0). Off
   * unless asked for or running the embedded default: anyone could mint as many buyers as they like,
   * which defeats the per-user limit. @default false
   */
  demoBuyers?: boolean;
}

function rate(name: string, fallback: number, env: NodeJS.ProcessEnv): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0)
    throw new TypeError(`${name} must be a non-negative integer, got "${raw}"`);
  return value;
}

function flag(name: string, fallback: boolean, env: NodeJS.ProcessEnv): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === '1' || raw === 'true') return true;
  if (raw === '0' || raw === 'false') return false;
  throw new TypeError(`${name} must be 1 or 0, got "${raw}"`);
}

/** `defaults` holds what the environment may override (the embedded default turns demo buyers on). */
export function httpConfigFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  jwtSecret?: string,
  defaults: { demoBuyers?: boolean } = {},
): HttpConfig {
  const secret = jwtSecret ?? env.LOCKSTOCK_JWT_SECRET;
  if (!secret || secret.length < 16) {
    throw new TypeError('LOCKSTOCK_JWT_SECRET must be set to a secret of at least 16 characters');
  }
  return {
    jwtSecret: secret,
    rateLimitPerUser: rate('LOCKSTOCK_RATE_LIMIT_PER_USER', 5, env),
    rateLimitPerIp: rate('LOCKSTOCK_RATE_LIMIT_PER_IP', 50, env),
    demoBuyers: flag('LOCKSTOCK_DEMO', defaults.demoBuyers ?? false, env),
  };
}
