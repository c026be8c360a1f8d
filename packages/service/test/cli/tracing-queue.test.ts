import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@lockstock/servers';
import { startTracing } from '../../src/cli/tracing.js';
import { droppedSpans } from '../../src/support/span-drops.js';
import { SpanKind, tracer } from '../../src/support/tracing.js';
import { Registry } from 'prom-client';
import { registerSpanDrops } from '../../src/cli/process-metrics.js';

/**
 * The tracer's export queue, against a real OTLP/HTTP receiver: spans beyond OTEL_BSP_MAX_QUEUE_SIZE
 * are dropped by the SDK, and every one of them is counted in lockstock_trace_spans_dropped_total
 * (the SDK itself only says so in its diagnostics, off by default). The receiver takes the spans in
 * and holds its answer, so nothing leaves the queue while the test fills it.
 */
let receiver: Server;
let endpoint: string;
let stop: (() => Promise<void>) | undefined;
const held: Array<() => void> = [];

beforeAll(async () => {
  receiver = createServer((request, response) => {
    request.resume();
    held.push(() => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  const port = await freePort();
  await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  for (const answer of held.splice(0)) answer();
  await stop?.();
  receiver.closeAllConnections();
  receiver.close();
});

describe('the span queue', () => {
  it('counts every span the full queue drops', async () => {
    stop = await startTracing('tool', {
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      // Every span sampled (the default samples 1% of new traces: cli/tracing.ts).
      OTEL_TRACES_SAMPLER: 'parentbased_always_on',
      OTEL_BSP_MAX_QUEUE_SIZE: '8',
      OTEL_BSP_SCHEDULE_DELAY: '3600000',
    });
    expect(stop).toBeDefined();
    const registry = new Registry();
    registerSpanDrops(registry);
    const before = droppedSpans();
    for (let i = 0; i < 20; i++) tracer().startSpan(`span ${i}`, { kind: SpanKind.INTERNAL }).end();
    // 8 queued (an export of 8 starts only once the batch is full, and the receiver holds it: the
    // queue may have handed them over, so at most 8 more fit), the rest dropped.
    const dropped = droppedSpans() - before;
    expect(dropped).toBeGreaterThanOrEqual(4);
    expect(dropped).toBeLessThanOrEqual(12);
    expect(await registry.metrics()).toMatch(
      new RegExp(`^lockstock_trace_spans_dropped_total ${dropped}$`, 'm'),
    );
  });
});
