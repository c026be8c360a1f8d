import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { signToken } from '../http/auth.js';
import { reconcile, type SaleDrift } from '../sale/reconcile.js';
import { assertStore, DataDirClaim, runningOwner, type DataDirOwner } from './data-dir.js';
import { action, type Resources } from './lifecycle.js';
import { JSON_OPTION_HELP, jsonTarget, type JsonTarget } from './options.js';
import { jwtSecret } from './jwt-secret.js';
import { defaultLogger, startRuntime } from './runtime.js';

interface ReconcileOptions {
  repair: boolean;
  redis?: string;
  database?: string;
  dataDir: string;
  json?: string | boolean;
}

export function registerReconcile(program: Command): void {
  program
    .command('reconcile')
    .description(
      'compare Redis with the order record per open sale; --repair fixes Redis to match. Exits 2 on drift (without --repair)',
    )
    .option('--repair', 'set Redis stock and buyer counts to what the record allows', false)
    .option('--redis <url>', 'Redis (REDIS_URL); default: the embedded one', process.env.REDIS_URL)
    .option(
      '--database <url>',
      'PostgreSQL (DATABASE_URL); default: the embedded one',
      process.env.DATABASE_URL,
    )
    .option('--data-dir <dir>', 'where embedded data lives (a running serve there is asked)', '.lockstock')
    .option('--json [file]', JSON_OPTION_HELP.replace('the table', 'the text'))
    .addHelpText(
      'after',
      '\nExit status: 0 when every open sale is in sync (or was repaired with --repair), 2 when drift was\nfound and not repaired, 1 on an error.',
    )
    .action(
      action(async (resources, options: ReconcileOptions) => {
        const report = await reconcileWhereTheDataIs(resources, options);
        print(report, jsonTarget(options.json));
        const drifted = report.some(
          (s) => s.condition !== 'ok' || s.drift !== 0 || s.buyersBelowRecord > 0 || s.unscheduledOrders > 0,
        );
        if (!options.repair && drifted) process.exitCode = 2;
      }),
    );
}

/**
 * With your own servers (--redis and --database): against them. With embedded data: a data directory
 * that holds no store is an error; one a running `serve` owns is reconciled by that serve (its
 * record can be opened by one process only); otherwise this process claims it and opens it itself.
 */
async function reconcileWhereTheDataIs(
  resources: Resources,
  options: ReconcileOptions,
): Promise<SaleDrift[]> {
  const embedded = !options.redis || !options.database;
  if (embedded) {
    assertStore(options.dataDir);
    const owner = runningOwner(options.dataDir);
    if (owner) return reconcileThrough(owner, options);
    const claim = DataDirClaim.claim(options.dataDir, 'reconcile');
    resources.add('the data directory', () => claim.release());
  }
  const runtime = await startRuntime(
    {
      ...(options.redis ? { redisUrl: options.redis } : {}),
      ...(options.database ? { databaseUrl: options.database } : {}),
      dataDir: options.dataDir,
      logger: defaultLogger(2), // stdout is the report (--json)
      pipelines: 0,
      sells: false, // a report changes nothing; --repair rebuilds under the recovery lock
    },
    resources,
  );
  return reconcile(runtime, { repair: options.repair });
}

/** Asks the serve that owns the data directory to reconcile (POST /api/reconcile, as the dashboard does). */
async function reconcileThrough(owner: DataDirOwner, options: ReconcileOptions): Promise<SaleDrift[]> {
  if (!owner.httpUrl) {
    throw new Error(
      `lockstock ${owner.command} (pid ${owner.pid}) owns ${options.dataDir} and is still starting: try again`,
    );
  }
  // An admin token signed with the data directory's own secret, valid for a minute.
  const token = signToken(jwtSecret(options.dataDir), 'lockstock-reconcile', { admin: true, ttlSeconds: 60 });
  const response = await fetch(`${owner.httpUrl}/api/reconcile`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ repair: options.repair }),
  }).catch((error: unknown) => {
    throw new Error(
      `the lockstock serve at ${owner.httpUrl} (pid ${owner.pid}) did not answer: ${String(error)}`,
    );
  });
  const body = (await response.json().catch(() => ({}))) as { sales?: SaleDrift[]; message?: string };
  if (!response.ok || !body.sales) {
    throw new Error(
      `the lockstock serve at ${owner.httpUrl} answered ${response.status}: ${body.message ?? 'no report'}`,
    );
  }
  return body.sales;
}

function print(report: readonly SaleDrift[], json: JsonTarget): void {
  const text = `${JSON.stringify({ sales: report }, null, 2)}\n`;
  if (json === 'stdout') {
    process.stdout.write(text);
    return;
  }
  if (json) writeFileSync(json.file, text);
  for (const s of report) {
    const state =
      s.condition !== 'ok'
        ? `REDIS ${s.condition.toUpperCase()}`
        : s.drift === 0 && s.buyersBelowRecord === 0 && s.unscheduledOrders === 0
          ? 'in sync'
          : 'DRIFT';
    const repaired =
      s.repairedRemaining === undefined ? '' : ` -> repaired: remaining ${s.repairedRemaining}`;
    process.stdout.write(
      `sale ${s.saleId}: stock ${s.stock}, Redis remaining ${s.redisRemaining ?? 'missing'}, held as offers ${s.heldOffers}, recorded ${s.recordedUnits}, ` +
        `in flight ${s.inFlightUnits}, drift ${s.drift}, buyers below record ${s.buyersBelowRecord}, ` +
        `unscheduled unpaid orders ${s.unscheduledOrders} [${state}]${repaired}\n`,
    );
  }
}
