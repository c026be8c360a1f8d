import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, PostgresServer, RedisServer } from '@lockstock/servers';
import { spawnCli, waitUntilHealthy, type CliProcess } from '../helpers/cli.js';
import { decodeTraceExport, type DecodedSpan } from '../helpers/otlp-protobuf.js';
import { until } from '../helpers/until.js';
import { signToken } from '../../src/http/auth.js';

/**
 * OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf (issue 47): a running `serve` (its order pipeline in the
 * order thread) exports to a receiver this test runs, which decodes every body from the protobuf
 * wire format with its own decoder (test/helpers/otlp-protobuf.ts). Buyers, more than the stock,
 * each with its own traceparent: every span arrives and decodes, each purchase is one trace from the
 * buyer's span to the order recorded, the sold-out answers are traced too, no span is orphaned or
 * sent twice, and the process counts no dropped span.
 */
const SECRET = 'tracing-protobuf-secret-0123456789';
const STOCK = 12;
const BUYERS = 20;

let redis: RedisServer;
let postgres: PostgresServer;
let serve: CliProcess;
let receiver: Server;
let url: string;
const received: DecodedSpan[] = [];
const bodies: Array<{ contentType: string; error?: string }> = [];

beforeAll(async () => {
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = { contentType: String(request.headers['content-type']) } as (typeof bodies)[number];
      try {
        if (request.url === '/v1/traces') received.push(...decodeTraceExport(Buffer.concat(chunks)));
      } catch (error) {
        body.error = String(error);
      }
      bodies.push(body);
      // An empty ExportTraceServiceResponse: everything accepted.
      response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
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
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_SERVICE_NAME: 'lockstock-protobuf',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
  );
  await waitUntilHealthy(`${url}/healthz`);
}, 120_000);

afterAll(async () => {
  serve?.kill();
  await serve?.exited;
  receiver?.close();
  await Promise.all([redis?.stop(), postgres?.stop()]);
});

describe('traces over OTLP/HTTP protobuf (OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf)', () => {
  it('every span arrives and decodes; each purchase is one trace, none orphaned, none dropped', async () => {
    const created = await fetch(`${url}/api/sales`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${signToken(SECRET, 'admin', { admin: true })}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ name: 'protobuf', stock: STOCK }),
    });
    const { id: saleId } = (await created.json()) as { id: string };
    const buyers = Array.from({ length: BUYERS }, (_, i) => ({
      user: `pb-${i}`,
      traceId: randomBytes(16).toString('hex'),
      clientSpanId: randomBytes(8).toString('hex'),
    }));
    // All buyers at once, then their answers.
    const answers = await Promise.all(
      buyers.map(async (buyer) => {
        const response = await fetch(`${url}/api/sales/${saleId}/orders`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${signToken(SECRET, buyer.user)}`,
            'content-type': 'application/json',
            traceparent: `00-${buyer.traceId}-${buyer.clientSpanId}-01`,
          },
          body: '{}',
        });
        await response.arrayBuffer();
        return { ...buyer, status: response.status, traceresponse: response.headers.get('traceresponse') };
      }),
    );
    const reserved = answers.filter((a) => a.status === 202);
    expect(reserved).toHaveLength(STOCK);
    expect(answers.filter((a) => a.status !== 202).every((a) => a.status >= 400 && a.status < 500)).toBe(
      true,
    );

    const ofTrace = (traceId: string) => received.filter((s) => s.traceId === traceId);
    const server = (traceId: string) => ofTrace(traceId).find((s) => s.name === 'POST /api/sales/:id/orders');
    await until(
      'every purchase traced, every order recorded',
      async () =>
        answers.every((a) => server(a.traceId) !== undefined) &&
        reserved.every((a) => ofTrace(a.traceId).some((s) => s.name === 'lockstock.order.record')),
      60_000,
    );

    // Every body was protobuf and decoded.
    expect(bodies.filter((b) => b.error !== undefined)).toEqual([]);
    expect(new Set(bodies.map((b) => b.contentType))).toEqual(new Set(['application/x-protobuf']));
    for (const span of received) {
      expect(span.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(span.spanId).toMatch(/^[0-9a-f]{16}$/);
      expect(span.name).not.toBe('');
      expect(span.endTimeUnixNano).toBeGreaterThanOrEqual(span.startTimeUnixNano);
      expect(span.resource['service.name']).toBe('lockstock-protobuf');
    }
    // Sent once each.
    expect(new Set(received.map((s) => s.spanId)).size).toBe(received.length);

    for (const answer of answers) {
      const http = server(answer.traceId)!;
      expect(http.parentSpanId).toBe(answer.clientSpanId);
      expect(http.kind).toBe(2); // SERVER
      expect(http.attributes['http.response.status_code']).toBe(answer.status);
      expect(answer.traceresponse).toBe(`00-${answer.traceId}-${http.spanId}-01`);
    }
    for (const answer of reserved) {
      const spans = ofTrace(answer.traceId);
      const http = server(answer.traceId)!;
      const reserve = spans.find((s) => s.name === 'lockstock.sale.reserve');
      const record = spans.find((s) => s.name === 'lockstock.order.record');
      expect(reserve?.parentSpanId).toBe(http.spanId);
      expect(record?.parentSpanId).toBe(reserve?.spanId);
      expect(record?.kind).toBe(5); // CONSUMER
    }
    // No orphan: each span's parent arrived, or is the buyer's own span.
    const known = new Set([...received.map((s) => s.spanId), ...buyers.map((b) => b.clientSpanId)]);
    const ours = new Set(buyers.map((b) => b.traceId));
    const orphans = received.filter(
      (s) => ours.has(s.traceId) && s.parentSpanId !== '' && !known.has(s.parentSpanId),
    );
    expect(orphans.map((s) => s.name)).toEqual([]);

    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(/^lockstock_trace_spans_dropped_total(\{[^}]*\})? 0$/m);
  }, 120_000);
});
