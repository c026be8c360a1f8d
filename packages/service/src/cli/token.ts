import type { Command } from 'commander';
import { signToken } from '../http/auth.js';
import { intOption } from './options.js';
import { jwtSecret } from './runtime.js';

export function registerToken(program: Command): void {
  program
    .command('token')
    .description('print a signed bearer token for trying the API by hand')
    .requiredOption('--user <id>', 'user id (the token subject)')
    .option('--admin', 'add role: "admin"', false)
    .option('--ttl <seconds>', 'lifetime', intOption(1, 30 * 86_400), 86_400)
    .option('--data-dir <dir>', 'where `serve` keeps its generated secret', '.lockstock')
    .action((options: { user: string; admin: boolean; ttl: number; dataDir: string }) => {
      const token = signToken(jwtSecret(options.dataDir), options.user, {
        admin: options.admin,
        ttlSeconds: options.ttl,
      });
      process.stdout.write(`${token}\n`);
    });
}
