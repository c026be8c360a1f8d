import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * The JWT secret: LOCKSTOCK_JWT_SECRET, or (for the embedded default) a random one kept in the data
 * dir so tokens survive restarts.
 */
export function jwtSecret(dataDir: string, env = process.env): string {
  if (env.LOCKSTOCK_JWT_SECRET) return env.LOCKSTOCK_JWT_SECRET;
  const file = join(resolve(dataDir), 'jwt-secret');
  if (!existsSync(file)) {
    mkdirSync(resolve(dataDir), { recursive: true });
    writeFileSync(file, randomBytes(32).toString('base64url'));
    chmodSync(file, 0o600);
  }
  return readFileSync(file, 'utf8').trim();
}
