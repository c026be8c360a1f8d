import diagnostics_channel from 'node:diagnostics_channel';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { LOCK_CHANNELS, RedisLockClient, type RedisLockClientOptions } from 'lockstock';
import type { LockAdapter } from './libraries.js';
import { connect, disconnect, type ClientSetting, type Target } from './targets.js';

/**
 * What the `instrumentation` scenario's rows attach to lockstock's locks (the same uncontended
 * mutex workload each time, in a fresh process):
 * - `base`: another checkout's lockstock build (`--base`), no subscriber — e.g. the commit before the
 *   diagnostics channels, "today's" lock for the claim that no subscriber costs nothing measurable;
 * - `none`: this build, nothing subscribed (what every lock pays: a `hasSubscribers` test per message);
 * - `holders`: `none` with the Redis client's `holderMetadata: true` (each acquire also writes its
 *   holder's record, so `inspect()` names host, pid, label and since when) — opt-in for its cost;
 * - `channels`: a no-op subscriber on every lockstock diagnostics channel (each message built and
 *   published, as any APM agent subscribing to them would cause);
 * - `otel`: `lockstock/otel`'s `instrumentLocks()` with the OpenTelemetry SDK — spans through a
 *   BatchSpanProcessor whose exporter drops them, metrics into a MeterProvider whose reader does not
 *   export during the run: the SDK's and the instrumentation's cost, without a network.
 */
export const INSTRUMENTATIONS = ['base', 'none', 'holders', 'channels', 'otel'] as const;
export type Instrumentation = (typeof INSTRUMENTATIONS)[number];

/** How a row's table cell names its variant. */
export const INSTRUMENTATION_LABEL: Record<Instrumentation, string> = {
  base: 'lockstock --base, no subscriber',
  none: 'lockstock, no subscriber',
  holders: 'lockstock + holderMetadata, no subscriber',
  channels: 'lockstock + channel subscriber',
  otel: 'lockstock + lockstock/otel SDK',
};

/** The variant's subscribers, set up in the sample's process before its locks; returns their undo. */
export async function instrument(variant: Instrumentation): Promise<() => Promise<void>> {
  if (variant === 'channels') {
    const noop = () => undefined;
    const handlers = { start: noop, end: noop, asyncStart: noop, asyncEnd: noop, error: noop };
    const acquire = diagnostics_channel.tracingChannel(LOCK_CHANNELS.acquire);
    acquire.subscribe(handlers);
    const plain = [
      LOCK_CHANNELS.hold,
      LOCK_CHANNELS.release,
      LOCK_CHANNELS.renew,
      LOCK_CHANNELS.lost,
      LOCK_CHANNELS.handoff,
      LOCK_CHANNELS.budget,
    ];
    for (const name of plain) diagnostics_channel.subscribe(name, noop);
    return async () => {
      acquire.unsubscribe(handlers);
      for (const name of plain) diagnostics_channel.unsubscribe(name, noop);
    };
  }
  if (variant === 'otel') {
    const [{ instrumentLocks }, { BasicTracerProvider, BatchSpanProcessor }, metricsSdk] = await Promise.all([
      import('lockstock/otel'),
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/sdk-metrics'),
    ]);
    const dropSpans = {
      export: (_spans: unknown, done: (result: { code: number }) => void) => done({ code: 0 }),
      shutdown: async () => undefined,
    };
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropSpans)] });
    const meterProvider = new metricsSdk.MeterProvider({
      readers: [
        new metricsSdk.PeriodicExportingMetricReader({
          exporter: new metricsSdk.InMemoryMetricExporter(metricsSdk.AggregationTemporality.CUMULATIVE),
          exportIntervalMillis: 3_600_000, // never during a run: what recording costs, not exporting
        }),
      ],
    });
    const stop = instrumentLocks({ tracerProvider, meterProvider });
    return async () => {
      stop();
      await Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()]);
    };
  }
  return async () => undefined;
}

/**
 * The `base` variant's mutex: RedisLockClient from `<checkout>/packages/lockstock/dist` (built there
 * first), on a connection with the run's ioredis settings, as libraries.ts builds this build's.
 */
export async function baseMutexAdapter(
  checkout: string,
  target: Target,
  setting: ClientSetting,
): Promise<LockAdapter> {
  const entry = pathToFileURL(join(checkout, 'packages', 'lockstock', 'dist', 'index.js')).href;
  const { RedisLockClient } = (await import(entry)) as typeof import('lockstock');
  return mutexAdapter(RedisLockClient, {}, target, setting);
}

/** The `holders` variant's mutex: this build's, with `holderMetadata: true`. */
export function holderMutexAdapter(target: Target, setting: ClientSetting): Promise<LockAdapter> {
  return mutexAdapter(RedisLockClient, { holderMetadata: true }, target, setting);
}

async function mutexAdapter(
  Client: typeof RedisLockClient,
  options: Omit<RedisLockClientOptions, 'redis'>,
  target: Target,
  setting: ClientSetting,
): Promise<LockAdapter> {
  const connections = await connect(target, setting);
  if (connections.topology !== 'single') {
    disconnect(connections);
    throw new Error('the instrumentation scenario runs on one Redis');
  }
  const locks = new Client({ redis: connections.client, ...options });
  return {
    acquire: (key) => locks.mutex(key).acquire(),
    close: async () => {
      await locks.close();
      disconnect(connections);
    },
  };
}
