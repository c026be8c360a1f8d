import { createServer, type Server } from 'node:http';
import { collectDefaultMetrics, type Registry } from 'prom-client';
import type { PipelineHealth } from '../sale/pipeline/order-pipeline.js';

export interface MetricsListenerOptions {
  port: number;
  host: string;
  registry: Registry;
  pipelines: () => readonly PipelineHealth[];
}

/**
 * The HTTP listener of a process that answers no buyers (`lockstock worker --metrics-port`): GET
 * /metrics (Prometheus text) and GET /healthz, nothing else. Both answer from this process's memory,
 * never waiting on Redis or PostgreSQL, so a scrape measures the process, not its dependencies: a
 * worker that does not answer is dead or frozen (LockstockWorkerDown), one that answers with
 * `lockstock_pipeline_failing_seconds` rising cannot write (LockstockWorkerFailing).
 *
 * /healthz: 200 while every consumer runs (failing ones included: they retry, nothing is lost, and a
 * restart would not bring the database back); 503 when none runs.
 */
export async function startMetricsListener(
  options: MetricsListenerOptions,
): Promise<Server & { url: string }> {
  const { registry, pipelines } = options;
  if (!registry.getSingleMetric('process_cpu_seconds_total')) collectDefaultMetrics({ register: registry });
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/metrics') {
      registry.metrics().then(
        (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
        (error: unknown) => response.writeHead(500, { 'content-type': 'text/plain' }).end(String(error)),
      );
      return;
    }
    if (path === '/healthz') {
      const now = Date.now();
      const consumers = pipelines().map((p) => ({
        consumer: p.consumer,
        running: p.running,
        failingForMs: p.failingSince === undefined ? null : now - p.failingSince,
        ...(p.lastError ? { lastError: p.lastError } : {}),
      }));
      const running = consumers.filter((c) => c.running).length;
      const failing = consumers.some((c) => c.failingForMs !== null);
      const status = running === 0 ? 'down' : failing ? 'degraded' : 'ok';
      response
        .writeHead(running === 0 ? 503 : 200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ status, consumers }));
      return;
    }
    response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found"}');
  });
  server.keepAliveTimeout = 5_000;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: options.port, host: options.host }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return Object.assign(server, { url: `http://${host}:${port}` });
}
