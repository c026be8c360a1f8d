import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, PostgresServer, RedisServer } from '@lockstock/servers';
import { spawnCli, waitUntilHealthy, type CliProcess } from '../helpers/cli.js';
import { until } from '../helpers/until.js';
import { signToken } from '../../src/http/auth.js';

/**
 * A purchase as one trace, through the real OTLP/HTTP exporter of a running `serve` (its order
 * pipeline in the order thread) to a receiver this test runs: the buyer's HTTP request, the
 * reservation script, and the order's recording in the pipeline, which joins the trace through the
 * traceparent the script kept in the stream entry. With LOCKSTOCK_TRACE_OUT=<file>, the spans received
 * are written there (scripts/trace-waterfall.mjs draws them for the README).
 */
const SECRET = 'tracing-secret-0123456789abcdef';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
  status?: { code?: number };
}
interface ReceivedSpan extends OtlpSpan {
  service: string;
  role: string;
  instance: string;
  environment: string;
}

let redis: RedisServer;
let postgres: PostgresServer;
let serve: CliProcess;
let receiver: Server;
let url: string;
const received: ReceivedSpan[] = [];
const contentTypes = new Set<string>();

function attribute(span: OtlpSpan, key: string): unknown {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  return value && Object.values(value)[0];
}

beforeAll(async () => {
  receiver = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      contentTypes.add(String(request.headers['content-type']));
      if (request.url === '/v1/traces') {
        const payload = JSON.parse(body) as {
          resourceSpans: Array<{
            resource: { attributes: OtlpSpan['attributes'] };
            scopeSpans: Array<{ spans: OtlpSpan[] }>;
          }>;
        };
        for (const { resource, scopeSpans } of payload.resourceSpans) {
          const of = (key: string) =>
            String(Object.values(resource.attributes?.find((a) => a.key === key)?.value ?? {})[0]);
          for (const { spans } of scopeSpans)
            for (const span of spans)
              received.push({
                ...span,
                service: of('service.name'),
                role: of('lockstock.role'),
                instance: of('service.instance.id'),
                environment: of('deployment.environment.name'),
              });
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  const receiverPort = await freePort();
  await new Promise<void>((resolve) => receiver.listen(receiverPort, '127.0.0.1', resolve));
  [redis, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  serve = spawnCli(
    ['serve', '--port', String(port), '--workers', '1', '--redis', redis.url, '--database', postgres.url],
    {
      LOCKSTOCK_JWT_SECRET: SECRET,
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiverPort}`,
      // Every purchase traced (the default samples 1% of new traces: cli/tracing.ts).
      OTEL_TRACES_SAMPLER: 'parentbased_always_on',
      OTEL_SERVICE_NAME: 'lockstock-under-test',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=issue-47',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
  );
  await waitUntilHealthy(`${url}/healthz`);
});

afterAll(async () => {
  serve?.kill();
  await serve?.exited;
  receiver?.close();
  await Promise.all([redis?.stop(), postgres?.stop()]);
});

describe('traces of a purchase (OTEL_EXPORTER_OTLP_ENDPOINT set)', () => {
  it("joins the buyer's trace: HTTP request → reservation script → the order recorded by the pipeline", async () => {
    const created = await fetch(`${url}/api/sales`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${signToken(SECRET, 'admin', { admin: true })}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ name: 'traced', stock: 5 }),
    });
    const { id: saleId } = (await created.json()) as { id: string };

    // The buyer's own trace: its client span's context, sent as W3C traceparent.
    const traceId = randomBytes(16).toString('hex');
    const clientSpanId = randomBytes(8).toString('hex');
    const bought = await fetch(`${url}/api/sales/${saleId}/orders`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${signToken(SECRET, 'traced-buyer')}`,
        'content-type': 'application/json',
        traceparent: `00-${traceId}-${clientSpanId}-01`,
      },
      body: '{}',
    });
    expect(bought.status).toBe(202);
    const { orderId } = (await bought.json()) as { orderId: string };
    // The caller is told the trace of its answer: its own trace, the server's span.
    expect(bought.headers.get('traceresponse')).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));

    const ofTrace = () => received.filter((s) => s.traceId === traceId);
    await until(
      'the recording span of the order to arrive',
      async () => ofTrace().some((s) => s.name === 'lockstock.order.record'),
      30_000,
    );
    const spans = ofTrace();
    const http = spans.find((s) => s.name === 'POST /api/sales/:id/orders');
    const reserve = spans.find((s) => s.name === 'lockstock.sale.reserve');
    const record = spans.find((s) => s.name === 'lockstock.order.record');
    expect(http, JSON.stringify(spans.map((s) => s.name))).toBeDefined();
    expect(http?.parentSpanId).toBe(clientSpanId);
    expect(http?.kind).toBe(2); // SERVER
    expect(attribute(http!, 'http.route')).toBe('/api/sales/:id/orders');
    expect(attribute(http!, 'http.response.status_code')).toBe(202);
    expect(attribute(http!, 'url.scheme')).toBe('http');
    expect(bought.headers.get('traceresponse')).toBe(`00-${traceId}-${http?.spanId}-01`);

    expect(reserve?.parentSpanId).toBe(http?.spanId);
    expect(reserve?.kind).toBe(3); // CLIENT
    expect(attribute(reserve!, 'lockstock.outcome')).toBe('reserved');
    expect(attribute(reserve!, 'lockstock.order.id')).toBe(orderId);

    // Recorded in another thread, from the stream entry's traceparent.
    expect(record?.parentSpanId).toBe(reserve?.spanId);
    expect(record?.kind).toBe(5); // CONSUMER
    expect(record?.role).toBe('orders');
    expect(attribute(record!, 'lockstock.order.id')).toBe(orderId);
    expect(attribute(record!, 'lockstock.outcome')).toBe('confirmed');
    expect(attribute(record!, 'messaging.operation.name')).toBe('record');
    expect(BigInt(record!.startTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(reserve!.startTimeUnixNano));
    expect(spans.every((s) => s.service === 'lockstock-under-test')).toBe(true);
    // OTEL_RESOURCE_ATTRIBUTES is honoured; the HTTP thread and the order thread are one process.
    expect(spans.every((s) => s.environment === 'issue-47')).toBe(true);
    expect(http?.role).toBe('serve');
    expect(http?.instance).toMatch(/^[0-9a-f-]{36}$/);
    expect(record?.instance).toBe(http?.instance);
    expect([...contentTypes]).toContain('application/json');

    if (process.env.LOCKSTOCK_TRACE_OUT)
      writeFileSync(process.env.LOCKSTOCK_TRACE_OUT, JSON.stringify(spans, null, 2));
  });

  it('an untraced purchase (no traceparent) is traced from the server on, and its stream entry carries one', async () => {
    const created = await fetch(`${url}/api/sales`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${signToken(SECRET, 'admin', { admin: true })}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ name: 'traced from the server', stock: 5 }),
    });
    const { id: saleId } = (await created.json()) as { id: string };
    const bought = await fetch(`${url}/api/sales/${saleId}/orders`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${signToken(SECRET, 'plain-buyer')}`,
        'content-type': 'application/json',
      },
      body: '{}',
    });
    const { orderId } = (await bought.json()) as { orderId: string };
    await until(
      'its recording span',
      async () =>
        received.some(
          (s) => s.name === 'lockstock.order.record' && attribute(s, 'lockstock.order.id') === orderId,
        ),
      30_000,
    );
    const record = received.find(
      (s) => s.name === 'lockstock.order.record' && attribute(s, 'lockstock.order.id') === orderId,
    )!;
    const server = received.find(
      (s) => s.traceId === record.traceId && s.name === 'POST /api/sales/:id/orders',
    );
    expect(server?.parentSpanId ?? '').toBe(''); // a root: the trace began at the server
  });

  it("traces the locks the service takes: a sale Redis lost is rebuilt under its recovery lock, seen as lockstock's lock spans", async () => {
    const sale = (await (
      await fetch(`${url}/api/sales`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${signToken(SECRET, 'admin', { admin: true })}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ name: 'lost and rebuilt', stock: 5 }),
      })
    ).json()) as { id: string };
    const lockName = `sale:${sale.id}:recovery`;
    expect(received.some((s) => attribute(s, 'lockstock.lock.name') === lockName)).toBe(false);
    const client = new Redis(redis.url);
    try {
      await client.flushall(); // Redis loses every sale: the next check rebuilds them under their locks
    } finally {
      client.disconnect();
    }
    await until(
      'the recovery lock traced',
      async () =>
        ['lock.acquire', 'lock.hold'].every((name) =>
          received.some((s) => s.name === name && attribute(s, 'lockstock.lock.name') === lockName),
        ),
      60_000,
    );
  });

  it('traces no scrape or probe', async () => {
    const scrapeTraceId = randomBytes(16).toString('hex');
    for (const path of ['/metrics', '/healthz']) {
      const answer = await fetch(`${url}${path}`, {
        headers: { traceparent: `00-${scrapeTraceId}-${randomBytes(8).toString('hex')}-01` },
      });
      expect(answer.status).toBe(200);
      expect(answer.headers.get('traceresponse')).toBeNull();
    }
    // A traced request after them: once its span arrives, the scrapes' would have too.
    const probe = randomBytes(16).toString('hex');
    await fetch(`${url}/api/sales`, {
      headers: { traceparent: `00-${probe}-${randomBytes(8).toString('hex')}-01` },
    });
    await until('the later span', async () => received.some((s) => s.traceId === probe), 30_000);
    expect(received.filter((s) => s.traceId === scrapeTraceId)).toEqual([]);
  });
});
