import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
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
 */
let on = false;

/** Called by cli/tracing.ts once a tracer provider is registered in this thread. */
export function setTracingOn(value: boolean): void {
  on = value;
}

export function tracingOn(): boolean {
  return on;
}

export const TRACER_NAME = 'lockstock-service';

export function tracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

/** The W3C traceparent of `ctx` (the active context by default), or undefined when nothing is traced. */
export function traceparentOf(ctx: Context = context.active()): string | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier.traceparent;
}

/** A context whose remote parent is `traceparent` (from a stream entry, or a request's headers). */
export function contextFrom(carrier: Record<string, string | string[] | undefined>): Context {
  return propagation.extract(ROOT_CONTEXT, carrier);
}

/**
 * Runs `fn` inside a new active span, ended when `fn` settles; an error marks it (and is rethrown).
 * Only call it when `tracingOn()`.
 */
export async function inSpan<T>(
  name: string,
  kind: SpanKind,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  return tracer().startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
      throw error;
    } finally {
      span.end();
    }
  });
}

export { SpanKind, SpanStatusCode };
