import { setTracingOn } from '../support/tracing.js';

/**
 * Starts OpenTelemetry tracing in this process or thread, the standard way: on only when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set and
 * `OTEL_SDK_DISABLED` is not `true`; spans go by OTLP/HTTP to that collector, batched (the
 * exporter and batch processor read their own `OTEL_*` settings); `OTEL_SERVICE_NAME` names the
 * service (default `lockstock`). The SDK is imported only then: an untraced process loads none of it.
 * Returns a function that flushes and stops it, or undefined when tracing is off.
 */
export async function startTracing(
  role: string,
  env = process.env,
): Promise<(() => Promise<void>) | undefined> {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint || env.OTEL_SDK_DISABLED === 'true') return undefined;
  const [{ NodeTracerProvider }, { BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] =
    await Promise.all([
      import('@opentelemetry/sdk-trace-node'),
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
    ]);
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({
      'service.name': env.OTEL_SERVICE_NAME ?? 'lockstock',
      'process.pid': process.pid,
      'lockstock.role': role,
    }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  // The W3C trace-context propagator, globally; no context manager: the service hands its contexts on
  // by hand (support/tracing.ts says why).
  provider.register({ contextManager: null });
  setTracingOn(true);
  return async () => {
    setTracingOn(false);
    await provider.shutdown().catch(() => undefined); // a collector gone at exit loses its last spans only
  };
}
