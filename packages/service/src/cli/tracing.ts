import { randomUUID } from 'node:crypto';
import { isMainThread } from 'node:worker_threads';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { setTracingOn } from '../support/tracing.js';
import { countDroppedSpans } from '../support/span-drops.js';

/** What a process is, as its traces and its metrics say (the resource attribute `lockstock.role`). */
export type ProcessRole = 'serve' | 'serve-http' | 'orders' | 'worker' | 'tool';

/**
 * This process's identity: one per process, the same in its traces and in its /metrics. A process's
 * main thread draws it and hands it to its threads (the order thread) through the environment they
 * copy; a forked process (an HTTP process of `serve --processes N`) is a main thread: its own.
 */
export const SERVICE_INSTANCE_ID = isMainThread
  ? (process.env.LOCKSTOCK_SERVICE_INSTANCE_ID = randomUUID())
  : (process.env.LOCKSTOCK_SERVICE_INSTANCE_ID ?? randomUUID());

/**
 * The default `service.name` of a role: `lockstock` for what answers buyers, `lockstock-worker` for a
 * `lockstock worker` (another deployable, scaled and paged on its own). OTEL_SERVICE_NAME wins.
 */
export function serviceName(role: ProcessRole, env = process.env): string {
  return env.OTEL_SERVICE_NAME || (role === 'worker' ? 'lockstock-worker' : 'lockstock');
}

/**
 * Spans a process may hold waiting for export. The SDK's default (2,048) dropped 30% of the record
 * spans of a worker resumed with a backlog (issue 47): it records up to 1,000 orders a batch, a span
 * each, faster than one export a second carries them. OTEL_BSP_MAX_QUEUE_SIZE overrides.
 */
const DEFAULT_MAX_QUEUE_SIZE = 65_536;
const DEFAULT_MAX_EXPORT_BATCH_SIZE = 2_048;

/**
 * Starts OpenTelemetry tracing in this process or thread, the standard way: on only when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set and
 * `OTEL_SDK_DISABLED` is not `true`; spans go by OTLP/HTTP to that collector, batched. The resource
 * follows OpenTelemetry's conventions: `service.name` (OTEL_SERVICE_NAME, else serviceName(role)),
 * `service.instance.id` (one per process), `lockstock.role`, `process.pid`, and whatever
 * OTEL_RESOURCE_ATTRIBUTES adds. OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL: `http/json` (the default here:
 * what earlier releases sent) or `http/protobuf`; `grpc` is not shipped (said once, then http/json).
 * Spans dropped because the queue was full are counted (`lockstock_trace_spans_dropped_total`).
 * The SDK is imported only then: an untraced process loads none of it.
 * Returns a function that flushes and stops it, or undefined when tracing is off.
 */
export async function startTracing(
  role: ProcessRole,
  env = process.env,
  warn: (message: string) => void = (message) => process.stderr.write(`${message}\n`),
): Promise<(() => Promise<void>) | undefined> {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint || env.OTEL_SDK_DISABLED === 'true') return undefined;
  const [
    { NodeTracerProvider },
    { BatchSpanProcessor },
    { detectResources, envDetector, resourceFromAttributes },
  ] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
  ]);
  const exporter = await traceExporter(env, warn);
  // OTEL_RESOURCE_ATTRIBUTES (and OTEL_SERVICE_NAME) first, ours beneath them: the operator's say wins.
  const fromEnv = detectResources({ detectors: [envDetector] });
  const resource = resourceFromAttributes({
    'service.name': serviceName(role, env),
    'service.instance.id': SERVICE_INSTANCE_ID,
    'process.pid': process.pid,
    'lockstock.role': role,
  }).merge(fromEnv);
  const maxQueueSize = positive(env.OTEL_BSP_MAX_QUEUE_SIZE) ?? DEFAULT_MAX_QUEUE_SIZE;
  const batch = new BatchSpanProcessor(exporter, {
    maxQueueSize,
    maxExportBatchSize: Math.min(
      maxQueueSize,
      positive(env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE) ?? DEFAULT_MAX_EXPORT_BATCH_SIZE,
    ),
  });
  const sampler = await defaultSampler(env);
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [countingDrops(batch, maxQueueSize)],
    ...(sampler ? { sampler } : {}),
  });
  // The W3C trace-context propagator, globally; no context manager: the service hands its contexts on
  // by hand (support/tracing.ts says why).
  provider.register({ contextManager: null });
  setTracingOn(true);
  // The locks this process takes (recovery's per-sale rebuild locks, the pipeline's), traced by the
  // library's own instrumentation, as an application of it would: `lock.acquire` and `lock.hold` spans.
  const { instrumentLocks } = await import('lockstock/otel');
  const stopLocks = instrumentLocks({ tracerProvider: provider });
  return async () => {
    stopLocks();
    setTracingOn(false);
    await provider.shutdown().catch(() => undefined); // a collector gone at exit loses its last spans only
  };
}

/**
 * The share of new traces sampled when OTEL_TRACES_SAMPLER is unset: 1% (issue 49). Every purchase
 * traced cost about half a purchase's CPU in `bench sale` (docs/benchmarks.md); one in a hundred
 * still shows a sale of 10,000 purchases/s in 100 traces a second. A caller's sampled traceparent is
 * always followed (parent-based).
 */
export const DEFAULT_SAMPLE_RATIO = 0.01;

/**
 * The sampler when the operator names none: parent-based, new traces at OTEL_TRACES_SAMPLER_ARG if it
 * is a ratio from 0 to 1, else DEFAULT_SAMPLE_RATIO. Undefined when OTEL_TRACES_SAMPLER is set: the SDK
 * then builds the one it names (`parentbased_always_on` samples every purchase).
 */
export async function defaultSampler(env: NodeJS.ProcessEnv = process.env) {
  if (env.OTEL_TRACES_SAMPLER) return undefined;
  const { ParentBasedSampler, TraceIdRatioBasedSampler } = await import('@opentelemetry/sdk-trace-base');
  const arg = env.OTEL_TRACES_SAMPLER_ARG;
  const ratio =
    arg !== undefined && arg !== '' && Number(arg) >= 0 && Number(arg) <= 1
      ? Number(arg)
      : DEFAULT_SAMPLE_RATIO;
  return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
}

function positive(text: string | undefined): number | undefined {
  const n = Number(text);
  return text && Number.isInteger(n) && n > 0 ? n : undefined;
}

/** The OTLP/HTTP exporter the protocol asks for. */
async function traceExporter(env: NodeJS.ProcessEnv, warn: (message: string) => void) {
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/json';
  if (protocol === 'http/protobuf') {
    const { protobufTraceExporter } = await import('./otlp-protobuf.js');
    return protobufTraceExporter();
  }
  if (protocol !== 'http/json') {
    warn(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported by lockstock: sending http/json`);
  }
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
  return new OTLPTraceExporter();
}

/**
 * The batch processor, with the spans it drops counted: it drops a span when its queue is full, and
 * says so only in its diagnostics (off by default). Its queue is read through the field the SDK keeps
 * it in (sdk-trace 2.x); test/cli/tracing-queue.test.ts fails if that stops counting.
 */
function countingDrops(batch: SpanProcessor, maxQueueSize: number): SpanProcessor {
  const queued = () => (batch as unknown as { _finishedSpans?: unknown[] })._finishedSpans?.length ?? 0;
  return {
    onStart: (span, context) => batch.onStart(span, context),
    onEnd: (span: ReadableSpan) => {
      if ((span.spanContext().traceFlags & 1) === 1 && queued() >= maxQueueSize) countDroppedSpans(1);
      batch.onEnd(span);
    },
    forceFlush: () => batch.forceFlush(),
    shutdown: () => batch.shutdown(),
  };
}
