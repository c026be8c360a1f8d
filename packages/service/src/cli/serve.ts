import { randomBytes } from 'node:crypto';
import { Option, type Command } from 'commander';
import { buildApp } from '../http/app.js';
import { signToken } from '../http/auth.js';
import { httpConfigFromEnv } from '../http/config.js';
import { SaleActivity } from '../sale/activity.js';
import { intOption } from './options.js';
import { DataDirClaim } from './data-dir.js';
import { action } from './lifecycle.js';
import { jwtSecret, startRuntime, type Durability, type Runtime } from './runtime.js';

interface ServeOptions {
  port: number;
  host: string;
  redis?: string;
  database?: string;
  workers: number;
  dataDir: string;
  durability: Durability;
}

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('the flash-sale HTTP service (with the order pipeline); embedded Redis + PGlite by default')
    .option(
      '--port <port>',
      'port to listen on (PORT)',
      intOption(0, 65_535),
      Number(process.env.PORT ?? 3000),
    )
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option(
      '--redis <url>',
      'Redis to use (REDIS_URL); default: a private redis-server',
      process.env.REDIS_URL,
    )
    .option(
      '--database <url>',
      'PostgreSQL to use (DATABASE_URL); default: embedded PGlite',
      process.env.DATABASE_URL,
    )
    .option('--workers <n>', 'order pipeline workers in this process', intOption(0, 64), 1)
    .option('--data-dir <dir>', 'where embedded data lives', '.lockstock')
    .addOption(
      new Option(
        '--durability <mode>',
        'what a 202 means: fsync (on disk first; the embedded redis-server runs appendfsync always, the embedded record syncs its commits) or memory (a machine crash can lose the last second)',
      )
        .choices(['fsync', 'memory'])
        .default('fsync')
        .env('LOCKSTOCK_DURABILITY'),
    )
    .action(
      action(async (resources, options: ServeOptions) => {
        // The embedded servers' data has one owner: a second serve stops here, touching nothing.
        const claim =
          !options.redis || !options.database ? DataDirClaim.claim(options.dataDir, 'serve') : undefined;
        if (claim) resources.add('the data directory', () => claim.release());
        const runtime = await startRuntime(
          {
            ...(options.redis ? { redisUrl: options.redis } : {}),
            ...(options.database ? { databaseUrl: options.database } : {}),
            dataDir: options.dataDir,
            pipelines: options.workers,
            orderThread: true,
            httpServer: true,
            durability: options.durability,
          },
          resources,
        );
        const secret = jwtSecret(options.dataDir);
        // Registered before the HTTP server, so it is closed after it: the last counts get written.
        const activity = new SaleActivity(runtime.redis, { logger: runtime.logger }).start();
        resources.add('the dashboard counters', () => activity.close());
        const embedded = runtime.embedded.redis && runtime.embedded.database;
        const app = await buildApp({
          service: runtime.service,
          redis: runtime.redis,
          db: runtime.db,
          metrics: runtime.metrics,
          // Demo buyers (POST /api/demo/token) are on for the embedded default only, unless LOCKSTOCK_DEMO says.
          config: httpConfigFromEnv(process.env, secret, { demoBuyers: embedded }),
          activity,
          logger: runtime.logger,
          pipelines: () => runtime.pipelineHealth(),
          ...(runtime.recovery ? { recovering: () => runtime.recovery?.recovering ?? [] } : {}),
          durability: runtime.durability,
        });
        resources.add('the HTTP server', () => app.close());
        const address = await app.listen({ port: options.port, host: options.host });
        claim?.update({ redisUrl: runtime.redisUrl, httpUrl: address });
        await announce(runtime, address, secret);
        return 'serving';
      }),
    );
}

/** Embedded mode: make sure there is something to buy, and say how to buy it. */
async function announce(runtime: Runtime, address: string, secret: string): Promise<void> {
  const { logger } = runtime;
  if (!runtime.embedded.database && !runtime.embedded.redis) {
    logger.info({ address }, 'lockstock is serving');
    return;
  }
  let sale = (await runtime.service.listOpenSales()).find((s) => s.endsAt.getTime() > Date.now());
  if (!sale) {
    sale = {
      ...(await runtime.service.createSale({
        name: 'Demo flash sale',
        stock: 100,
        endsAt: new Date(Date.now() + 7 * 86_400_000),
      })),
      persistedSold: 0,
    };
  }
  // A buyer of its own per start: the demo sale's limit is one unit per buyer, so a curl printed by
  // an earlier start (same buyer) would be answered 409 limit_reached.
  const token = signToken(secret, `demo-buyer-${randomBytes(4).toString('hex')}`);
  const admin = signToken(secret, 'demo-admin', { admin: true });
  // On loopback the dashboard link signs its admin panel in (the token rides in the URL fragment,
  // which browsers never send: it stays out of every server log). Elsewhere: the plain address.
  const loopback = /^https?:\/\/(127\.\d+\.\d+\.\d+|\[::1\]|localhost)(:\d+)?$/.test(address);
  const dashboard = loopback ? `${address}/#admin=${admin}` : `${address}/`;
  process.stdout.write(
    [
      '',
      `lockstock is serving on ${address}  (API reference: ${address}/docs)`,
      `Dashboard${loopback ? ', signed in as admin' : ''}: ${dashboard}`,
      `Sale ${sale.id} "${sale.name}": ${sale.stock} units. Buy one:`,
      '',
      `  curl -s -X POST ${address}/api/sales/${sale.id}/orders -H 'Authorization: Bearer ${token}' -H 'Content-Type: application/json' -d '{"quantity":1}'`,
      '',
      `Check it:  curl -s ${address}/api/sales/${sale.id}`,
      `Admin token (create sales): ${admin}`,
      `More tokens: npx lockstock token --user <id> [--admin]`,
      '',
    ].join('\n'),
  );
}
