import {
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';

/**
 * The service's traces, through the OpenTelemetry API only (the SDK is started by cli/tracing.ts,
 * when OTEL_EXPORTER_OTLP_ENDPOINT is set). Everything here is a no-op until then — and the hot paths
 * ask `tracingOn()` first, so an untraced purchase pays one boolean test, not a no-op span.
 *
 * A purchase is one trace: the HTTP request (SERVER), the reservation script (CLIENT), and — on the
 * order pipeline, in another thread or process — the order's recording (CONSUMER), whose parent is
 * the reservation: its W3C `traceparent` travels in the stream entry (field `tp`).
 *
 * Contexts are passed by hand (the request's context to `buy`, the span's to the script), not through
 * a context manager: the SDK's AsyncLocalStorage one turns on Node's promise hooks for every promise of
 * the process, and profiled under wrk that was the largest part of what tracing cost a purchase.
 */
let on = false;
let cached: Tracer | undefined;

/** Called by cli/tracing.ts once a tracer provider is registered in this thread. */
export function setTracingOn(value: boolean): void {
  on = value;
  cached = undefined;
}

export function tracingOn(): boolean {
  return on;
}

export const TRACER_NAME = 'lockstock-service';

/** The service's tracer, looked up once per provider (each lookup walks the API's global registry). */
export function tracer(): Tracer {
  return (cached ??= trace.getTracer(TRACER_NAME));
}

/**
 * The W3C traceparent of `span`, or undefined when it is not sampled: an unsampled purchase puts no
 * `tp` in its stream entry, so neither Redis nor the pipeline pays for a trace nobody keeps.
 */
export function traceparentOf(span: Span): string | undefined {
  const { traceId, spanId, traceFlags } = span.spanContext();
  if ((traceFlags & TraceFlags.SAMPLED) === 0) return undefined;
  return `00-${traceId}-${spanId}-01`;
}

/** A context whose remote parent is `traceparent` (from a stream entry, or a request's headers). */
export function contextFrom(carrier: Record<string, string | string[] | undefined>): Context {
  // Most purchases come without a traceparent: no propagator to run then.
  if (carrier.traceparent === undefined) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, carrier);
}

/**
 * Runs `fn` in a new span, child of `parent`, ended when `fn` settles; an error marks it (and is
 * rethrown). Only call it when `tracingOn()`.
 */
export async function inSpan<T>(
  name: string,
  kind: SpanKind,
  attributes: Attributes,
  parent: Context,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const span = tracer().startSpan(name, { kind, attributes }, parent);
  try {
    return await fn(span);
  } catch (error) {
    span.recordException(error as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
    throw error;
  } finally {
    span.end();
  }
}

export { ROOT_CONTEXT, SpanKind, SpanStatusCode, type Context };
