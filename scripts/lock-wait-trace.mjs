// Records a lock wait as OpenTelemetry spans, for the README's picture: two tasks of one trace take
// the same Redis mutex; the second waits for the first (lockstock/otel's `lock.acquire` spans cover
// the waits, `lock.hold` the holds). Writes the spans as OTLP/JSON-like objects, which
// scripts/trace-waterfall.mjs draws: `node scripts/lock-wait-trace.mjs <spans.json>` (after `npm run
// build`; starts and stops its own redis-server).
import { writeFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { Redis } from 'ioredis';
import { RedisServer } from '@lockstock/servers';
import { RedisLockClient } from 'lockstock';
import { instrumentLocks } from 'lockstock/otel';

const out = process.argv[2] ?? 'lock-wait-spans.json';
const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
provider.register();
const dispose = instrumentLocks({ tracerProvider: provider });
const server = await RedisServer.start();
const connections = [new Redis(server.url), new Redis(server.url)];
const clients = connections.map((redis) => new RedisLockClient({ redis }));
const tracer = trace.getTracer('lock-wait-example');
try {
  // Connections and scripts warmed first, so the picture shows the wait, not a first connect.
  await Promise.all(clients.map((client, i) => client.mutex(`warm-up:${i}`).run(async () => undefined)));
  exporter.reset();
  await tracer.startActiveSpan('settle invoice 42 (two workers)', async (root) => {
    const work = (client, label, holdMs) =>
      tracer.startActiveSpan(label, async (span) => {
        await client.mutex('invoice:42').run(() => delay(holdMs), { waitMs: 5_000 });
        span.end();
      });
    const first = work(clients[0], 'worker A: charge the card', 120);
    await delay(15); // B asks while A holds
    await Promise.all([first, work(clients[1], 'worker B: send the receipt', 40)]);
    root.end();
  });
} finally {
  dispose();
  await Promise.all(clients.map((client) => client.close()));
  connections.forEach((redis) => redis.disconnect());
  await server.stop();
}
const toNs = ([s, ns]) => (BigInt(s) * 1_000_000_000n + BigInt(ns)).toString();
const spans = exporter.getFinishedSpans().map((span) => ({
  traceId: span.spanContext().traceId,
  spanId: span.spanContext().spanId,
  parentSpanId: span.parentSpanContext?.spanId ?? span.parentSpanId,
  name: span.name,
  kind: span.kind + 1, // the API's enum (INTERNAL = 0) → OTLP's (INTERNAL = 1)
  startTimeUnixNano: toNs(span.startTime),
  endTimeUnixNano: toNs(span.endTime),
  attributes: Object.entries(span.attributes).map(([key, value]) => ({
    key,
    value: typeof value === 'number' ? { intValue: value } : { stringValue: String(value) },
  })),
  service: 'your app',
  role: span.name.startsWith('lock.') ? 'lockstock' : 'app',
}));
writeFileSync(out, JSON.stringify(spans, null, 2));
process.stdout.write(`wrote ${out}: ${spans.length} spans\n`);
await provider.shutdown();
