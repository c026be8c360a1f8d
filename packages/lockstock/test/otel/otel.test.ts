import { AsyncLocalStorage } from 'node:async_hooks';
import { context, ROOT_CONTEXT, SpanStatusCode, type Context, type ContextManager } from '@opentelemetry/api';
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type DataPoint,
  type Histogram,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LockTimeoutError } from '../../src/index.js';
import { instrumentLocks, LOCK_METRICS } from '../../src/otel/index.js';
import { useRedis } from '../helpers/redis.js';

// lockstock/otel against a real Redis, read back through the SDK's in-memory exporters.
const env = useRedis();

/** The context manager the SDK's Node package registers, in a few lines: parents follow async calls. */
class AsyncLocalStorageContexts implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.storage.run(ctx, () => fn.call(thisArg, ...args));
  }
  bind<T>(_ctx: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.storage.disable();
    return this;
  }
}

const spans = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({
  exporter: metricExporter,
  exportIntervalMillis: 3_600_000,
});
const meterProvider = new MeterProvider({ readers: [reader] });
let dispose: () => void;

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContexts());
  dispose = instrumentLocks({ tracerProvider, meterProvider });
});
afterAll(async () => {
  dispose();
  context.disable();
  await meterProvider.shutdown();
  await tracerProvider.shutdown();
});
afterEach(() => spans.reset());

let unique = 0;
const lockName = (label: string) => `otel-${label}-${process.pid}-${++unique}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const spansOf = (name: string) =>
  spans.getFinishedSpans().filter((span) => span.attributes['lockstock.lock.name'] === name);

/** The latest cumulative value of each metric, collected now. */
async function collect(): Promise<Map<string, MetricData>> {
  await reader.forceFlush();
  const latest = metricExporter.getMetrics().at(-1);
  metricExporter.reset();
  const byName = new Map<string, MetricData>();
  for (const scope of latest?.scopeMetrics ?? []) {
    for (const metric of scope.metrics) byName.set(metric.descriptor.name, metric);
  }
  return byName;
}

/** Data points of `metric` whose attributes include `attributes`. */
function points(metric: MetricData | undefined, attributes: Record<string, string>): DataPoint<unknown>[] {
  return ((metric?.dataPoints ?? []) as DataPoint<unknown>[]).filter((point) =>
    Object.entries(attributes).every(([key, value]) => point.attributes[key] === value),
  );
}
const sum = (metric: MetricData | undefined, attributes: Record<string, string>) =>
  points(metric, attributes).reduce((total, point) => total + (point.value as number), 0);
const count = (metric: MetricData | undefined, attributes: Record<string, string>) =>
  points(metric, attributes).reduce((total, point) => total + (point.value as Histogram).count, 0);

describe('lockstock/otel', () => {
  it('records lock.acquire and lock.hold under the caller span, the hold linked to its acquire', async () => {
    const name = lockName('spans');
    const lock = env.locks().mutex(name);
    const tracer = tracerProvider.getTracer('test');
    const token = await tracer.startActiveSpan('checkout', async (parent) => {
      const handle = await lock.acquire();
      await sleep(20);
      await handle.release();
      parent.end();
      return handle.fencingToken;
    });
    const [acquire, hold] = spansOf(name) as [ReadableSpan, ReadableSpan];
    expect(spansOf(name).map((span) => span.name)).toEqual(['lock.acquire', 'lock.hold']);
    const checkout = spans.getFinishedSpans().find((span) => span.name === 'checkout')!;
    expect(acquire.attributes).toMatchObject({
      'lockstock.lock.name': name,
      'lockstock.lock.kind': 'mutex',
      'lockstock.lock.backend': 'redis',
      'lockstock.lock.outcome': 'acquired',
      'lockstock.lock.fencing_token': token,
    });
    expect(acquire.parentSpanContext?.spanId).toBe(checkout.spanContext().spanId);
    expect(hold.parentSpanContext?.spanId).toBe(checkout.spanContext().spanId);
    expect(hold.links.map((link) => link.context.spanId)).toEqual([acquire.spanContext().spanId]);
    expect(hold.attributes).toMatchObject({
      'lockstock.lock.hold.ended': 'released',
      'lockstock.lock.outcome': 'released',
      'lockstock.lock.fencing_token': token,
    });
    const ms = (time: [number, number]) => time[0] * 1_000 + time[1] / 1e6;
    expect(ms(hold.endTime) - ms(hold.startTime)).toBeGreaterThanOrEqual(19);
    // The hold begins when the lock is granted, inside the acquire (a loaded machine may take a few
    // ms from the grant to the acquire's end): never before the acquire began.
    expect(ms(hold.startTime)).toBeGreaterThanOrEqual(ms(acquire.startTime));
    expect(acquire.status.code).toBe(SpanStatusCode.UNSET);
  });

  it("names the acquire's trace in the holder's record, also when a release hands the lock over", async () => {
    const name = lockName('holder-trace');
    const locks = env.locks({ holderMetadata: true });
    const observer = env.locks(); // another client reads what Redis stored
    const tracer = tracerProvider.getTracer('test');
    // Two traces: the first holder's and a waiter's of the same client, which a release hands to.
    const first = await tracer.startActiveSpan('first', async (span) => {
      const handle = await locks.mutex(name).acquire({ label: 'first' });
      span.end();
      return { handle, traceId: span.spanContext().traceId };
    });
    const [held] = (await observer.mutex(name).inspect()).heldBy ?? [];
    expect(held).toMatchObject({ owner: first.handle.owner, label: 'first', traceId: first.traceId });
    const second = tracer.startActiveSpan('second', (span) => {
      const waiting = locks.mutex(name).acquire({ label: 'second' });
      span.end();
      return { waiting, traceId: span.spanContext().traceId };
    });
    expect(second.traceId).not.toBe(first.traceId);
    // Released once the waiter is queued in Redis (its client in the lock's turn queue): the release
    // then hands the lock to it in the script, with the waiter's record.
    while ((await env.redis.zcard(`ls:{${name}}:queue`)) === 0) await sleep(5);
    await first.handle.release();
    const handle = await second.waiting;
    const [next] = (await observer.mutex(name).inspect()).heldBy ?? [];
    expect(next).toMatchObject({ owner: handle.owner, label: 'second', traceId: second.traceId });
    // The acquire span's own trace id is the one recorded.
    const acquire = spansOf(name).filter((span) => span.name === 'lock.acquire');
    expect(acquire.map((span) => span.spanContext().traceId)).toEqual([first.traceId, second.traceId]);
    await handle.release();
  });

  it('says how each acquire ended; waits, holds and waiters in the metrics', async () => {
    const name = lockName('metrics');
    const locks = env.locks();
    const lock = locks.mutex(name);
    const before = await collect();
    const base = (outcome: string) =>
      count(before.get(LOCK_METRICS.waitDuration), { 'lockstock.lock.outcome': outcome });
    const held = await lock.acquire();
    expect(await lock.tryAcquire()).toBeUndefined();
    const waiting = lock.acquire({ waitMs: 1_000 });
    waiting.catch(() => undefined); // awaited below
    // Seen waiting in the metrics (polled: a loaded machine may take a while to queue it).
    await expect
      .poll(async () => sum((await collect()).get(LOCK_METRICS.waiters), { 'lockstock.lock.kind': 'mutex' }))
      .toBe(1);
    await expect(waiting).rejects.toBeInstanceOf(LockTimeoutError);
    await held.release();
    const after = await collect();

    const wait = after.get(LOCK_METRICS.waitDuration)!;
    expect(wait.descriptor.unit).toBe('s');
    expect(wait.dataPointType).toBe(DataPointType.HISTOGRAM);
    const waited = (outcome: string) => count(wait, { 'lockstock.lock.outcome': outcome }) - base(outcome);
    expect([waited('acquired'), waited('busy'), waited('timeout')]).toEqual([1, 1, 1]);
    const timeouts = points(wait, { 'lockstock.lock.outcome': 'timeout', 'lockstock.lock.backend': 'redis' });
    expect((timeouts[0]!.value as Histogram).max).toBeGreaterThanOrEqual(0.99);
    expect(
      sum(after.get(LOCK_METRICS.acquisitions), { 'lockstock.lock.outcome': 'timeout' }),
    ).toBeGreaterThanOrEqual(1);
    expect(after.get(LOCK_METRICS.acquisitions)!.descriptor.unit).toBe('{acquisition}');
    // No lock name in metric attributes unless asked for (one series per name otherwise).
    expect(Object.keys(wait.dataPoints[0]!.attributes)).not.toContain('lockstock.lock.name');
    const holds = after.get(LOCK_METRICS.holdDuration)!;
    expect(holds.descriptor.unit).toBe('s');
    expect(count(holds, { 'lockstock.lock.hold.ended': 'released' })).toBeGreaterThanOrEqual(1);
    expect(sum(after.get(LOCK_METRICS.waiters), {})).toBe(0);
    const refused = spansOf(name).filter((span) => span.name === 'lock.acquire');
    expect(refused.map((span) => span.attributes['lockstock.lock.outcome'])).toEqual([
      'acquired',
      'busy',
      'timeout',
    ]);
  });

  it('counts losses by reason and marks the lost hold span as an error', async () => {
    const name = lockName('lost');
    const locks = env.locks({ watchdogTimeoutMs: 150 });
    const handle = await locks.mutex(name).acquire();
    await env.redis.del(`ls:{${name}}`);
    await new Promise((resolve) => handle.signal.addEventListener('abort', resolve, { once: true }));
    await handle.release();
    const hold = spansOf(name).find((span) => span.name === 'lock.hold')!;
    expect(hold.attributes).toMatchObject({
      'lockstock.lock.hold.ended': 'lost',
      'lockstock.lock.outcome': 'expired',
    });
    expect(hold.status.code).toBe(SpanStatusCode.ERROR);
    const metrics = await collect();
    expect(
      sum(metrics.get(LOCK_METRICS.losses), { 'lockstock.lock.loss.reason': 'expired' }),
    ).toBeGreaterThanOrEqual(1);
  });

  it('stops recording once disposed', async () => {
    const name = lockName('disposed');
    const own = instrumentLocks({ tracerProvider, meterProvider });
    own();
    own(); // idempotent
    const lock = env.locks().mutex(name);
    await (await lock.acquire()).release();
    expect(spansOf(name)).toHaveLength(2); // from the suite's own instrumentLocks only
  });
});
