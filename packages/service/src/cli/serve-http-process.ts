/**
 * An HTTP process of `serve --processes N`, forked by the primary (serve-primary.ts): it answers
 * buyers on the shared port. Redis is the primary's (embedded or REDIS_URL); the record is
 * DATABASE_URL's server, or the primary's embedded store reached over the IPC channel. It records no
 * orders (no pipelines, no sweeper: those run in the primary) but sells: it leases its own order-id
 * worker and checks every sale against the record before selling it, as any serve process does.
 */
import cluster from 'node:cluster';
import type { PipelineHealth } from '../sale/pipeline/order-pipeline.js';
import { remoteDatabase } from '../sale/store/remote-db.js';
import type { Resources } from './lifecycle.js';
import { jwtSecret } from './jwt-secret.js';
import { defaultLogger, startRuntime } from './runtime.js';
import { listen, runtimeOptions, type ServeOptions } from './serve-common.js';
import {
  ClusterRegistry,
  HTTP_PROCESS_ENV,
  isLockstockMessage,
  ProcessLink,
  sendToPrimary,
  type PrimaryMessage,
} from './serve-ipc.js';

export function isHttpProcess(env = process.env): boolean {
  return cluster.isWorker && env[HTTP_PROCESS_ENV.role] === 'http';
}

export async function serveHttpProcess(resources: Resources, options: ServeOptions): Promise<'serving'> {
  const env = process.env;
  const redisUrl = env[HTTP_PROCESS_ENV.redisUrl];
  try {
    if (!redisUrl) throw new Error(`${HTTP_PROCESS_ENV.redisUrl} is not set: started by hand?`);
    let pipelines: readonly PipelineHealth[] = [];
    process.on('message', (message: unknown) => {
      if (isLockstockMessage(message) && (message as PrimaryMessage).lockstock === 'health')
        pipelines = (message as Extract<PrimaryMessage, { lockstock: 'health' }>).pipelines;
    });
    const link = env[HTTP_PROCESS_ENV.embeddedRecord] === '1' ? new ProcessLink() : undefined;
    if (link) resources.add('the link to the order store', () => link.close());
    const runtime = await startRuntime(
      runtimeOptions(options, {
        redisUrl,
        ...(link ? { record: remoteDatabase(link, 'pglite') } : {}),
        pipelines: 0,
        orderThread: false,
        httpServer: true,
        role: 'serve-http',
        metricsRegistry: new ClusterRegistry(),
        logger: defaultLogger().child({ http: cluster.worker?.id }),
      }),
      resources,
    );
    const address = await listen(resources, runtime, options, {
      secret: jwtSecret(options.dataDir),
      demoBuyers: env[HTTP_PROCESS_ENV.embedded] === '1',
      pipelines: () => pipelines,
    });
    sendToPrimary({ lockstock: 'listening', address });
    return 'serving';
  } catch (error) {
    sendToPrimary({ lockstock: 'failed', message: error instanceof Error ? error.message : String(error) });
    throw error;
  }
}
