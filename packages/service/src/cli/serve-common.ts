/** What the serve command's single process, its primary and its HTTP processes share. */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { buildApp } from '../http/app.js';
import { signToken } from '../http/auth.js';
import { httpConfigFromEnv } from '../http/config.js';
import { SaleActivity } from '../sale/activity.js';
import type { PipelineHealth } from '../sale/pipeline/order-pipeline.js';
import { DataDirClaim } from './data-dir.js';
import type { Resources } from './lifecycle.js';
import type { Durability, Runtime, RuntimeOptions } from './runtime.js';
import type { GaugeSnapshot } from '../sale/gauges.js';

export interface ServeOptions {
  port: number;
  host: string;
  redis?: string;
  database?: string;
  workers: number;
  dataDir: string;
  durability: Durability;
  processes: number;
}

/** The data directory claim of a serve that runs embedded servers (none when both are external). */
export function claimDataDir(options: ServeOptions): DataDirClaim | undefined {
  return !options.redis || !options.database ? DataDirClaim.claim(options.dataDir, 'serve') : undefined;
}

/**
 * Fails at once, in one line, when serve could not listen where it is asked to: a bind test before
 * anything starts (Redis, the record, the pipelines), instead of a failure after the whole start-up.
 * Port 0 (any free port) is not tested.
 */
export async function assertCanListen(options: Pick<ServeOptions, 'port' | 'host'>): Promise<void> {
  if (options.port === 0) return;
  const server = createServer();
  const error = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
    server.once('error', resolve);
    server.listen({ port: options.port, host: options.host, exclusive: true }, () => resolve(undefined));
  });
  if (!error) {
    await new Promise((resolve) => server.close(resolve));
    return;
  }
  const elsewhere = `use another port: --port N (or PORT=N; with npm start: npm start -- --port N)`;
  if (error.code === 'EADDRINUSE') {
    throw new Error(
      `port ${options.port} on ${options.host} is already in use: stop what listens there, or ${elsewhere}`,
    );
  }
  if (error.code === 'EACCES') {
    throw new Error(
      `no permission to listen on port ${options.port} (ports below 1024 need root): ${elsewhere}`,
    );
  }
  throw new Error(
    `cannot listen on ${options.host}:${options.port} (${error.code ?? error.message}): check --host, or ${elsewhere}`,
  );
}

/** What startRuntime gets from serve's options (the caller adds its own part). */
export function runtimeOptions(options: ServeOptions, more: RuntimeOptions): RuntimeOptions {
  return {
    ...(options.redis ? { redisUrl: options.redis } : {}),
    ...(options.database ? { databaseUrl: options.database } : {}),
    dataDir: options.dataDir,
    pipelines: options.workers,
    orderThread: true,
    durability: options.durability,
    ...more,
  };
}

/**
 * The dashboard's counters on the runtime. A write Redis refuses is part of Redis's outage, said in
 * its one line each way: as a warning it was a line with a stack every second of an outage whose last
 * second had purchases (issue 47).
 */
export function dashboardCounters(runtime: Runtime): SaleActivity {
  return new SaleActivity(runtime.context, { logger: runtime.dependencies.quiet(runtime.logger) });
}

/** Answers HTTP on the runtime: the dashboard counters, the app, the listener. Resolves with its address. */
export async function listen(
  resources: Resources,
  runtime: Runtime,
  options: ServeOptions,
  http: { secret: string; demoBuyers: boolean; pipelines: () => readonly PipelineHealth[] },
): Promise<string> {
  // Registered before the HTTP server, so it is closed after it: the last counts get written.
  const activity = dashboardCounters(runtime).start();
  resources.add('the dashboard counters', () => activity.close());
  const app = await buildApp({
    service: runtime.service,
    context: runtime.context,
    db: runtime.db,
    metrics: runtime.metrics,
    // Demo buyers (POST /api/demo/token) are on for the embedded default only, unless LOCKSTOCK_DEMO says.
    config: httpConfigFromEnv(process.env, http.secret, { demoBuyers: http.demoBuyers }),
    activity,
    logger: runtime.logger,
    pipelines: http.pipelines,
    ...(runtime.recovery ? { recovering: () => runtime.recovery?.recovering ?? [] } : {}),
    // The runner's own service, with the beacon source: POST …/raffle/draw can then draw with the round.
    ...(runtime.raffles ? { raffles: runtime.raffles } : {}),
    durability: runtime.durability,
    dependencies: runtime.dependencies,
  });
  resources.add('the HTTP server', () => app.close());
  return app.listen({ port: options.port, host: options.host });
}

/** Embedded mode: make sure there is something to buy, and say how to buy it. */
export async function announce(runtime: Runtime, address: string, secret: string): Promise<void> {
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

/**
 * What the sale gauges' background readings tell the dependency log: a dependency that answered a
 * reading is up (ends an outage said once), one that did not is down.
 */
export function gaugeReadingsToLog(runtime: Runtime): (reading: GaugeSnapshot, startedAt: number) => void {
  const unanswered = new Error('did not answer the metrics reading within 1 s');
  return (reading, startedAt) => {
    for (const dependency of ['redis', 'database'] as const) {
      if (reading[dependency]) runtime.dependencies.up(dependency);
      else runtime.dependencies.down(dependency, unanswered, false, startedAt);
    }
  };
}
