import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { signToken } from '../http/auth.js';
import { httpConfigFromEnv } from '../http/config.js';
import { intOption } from './options.js';

export function registerToken(program: Command): void {
  program
    .command('token')
    .description('print a signed bearer token for trying the API by hand')
    .requiredOption('--user <id>', 'user id (the token subject)')
    .option('--admin', 'add role: "admin"', false)
    .option('--ttl <seconds>', 'lifetime', intOption(1, 30 * 86_400), 86_400)
    .option(
      '--data-dir <dir>',
      'the data directory of the serve that is to accept the token (its secret is kept there; LOCKSTOCK_JWT_SECRET instead if set)',
      '.lockstock',
    )
    .action((options: { user: string; admin: boolean; ttl: number; dataDir: string }) => {
      const token = signToken(servedSecret(options.dataDir), options.user, {
        admin: options.admin,
        ttlSeconds: options.ttl,
      });
      process.stdout.write(`${token}\n`);
    });
}

/**
 * The secret a serve verifies tokens with: LOCKSTOCK_JWT_SECRET, or the one serve keeps in its data
 * directory. Never a new one (a token signed with a secret no serve uses is accepted by none), and
 * never one serve would refuse (the same check as serve's).
 */
function servedSecret(dataDir: string, env = process.env): string {
  let secret = env.LOCKSTOCK_JWT_SECRET;
  if (!secret) {
    const dir = resolve(dataDir);
    const file = join(dir, 'jwt-secret');
    if (!existsSync(dir)) {
      throw new Error(
        `${dir} does not exist: pass the --data-dir of a lockstock serve (default .lockstock, where you ran it), or set LOCKSTOCK_JWT_SECRET`,
      );
    }
    if (!existsSync(file)) {
      throw new Error(
        `${dir} holds no jwt-secret: start lockstock serve with this --data-dir first (it creates the secret), or set LOCKSTOCK_JWT_SECRET`,
      );
    }
    secret = readFileSync(file, 'utf8').trim();
  }
  return httpConfigFromEnv({}, secret).jwtSecret;
}
