import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
import {
  convertLegacyHttpOptions,
  createOtlpHttpExportDelegate,
} from '@opentelemetry/otlp-exporter-base/node-http';
import { ProtobufTraceSerializer, TraceExporterMetricsHelper } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';

/**
 * OTLP/HTTP with protobuf bodies (OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf), built as
 * @opentelemetry/exporter-trace-otlp-proto builds it, from the two packages the JSON exporter already
 * brings: the same endpoint, headers and timeout variables, `application/x-protobuf` bodies.
 */
export function protobufTraceExporter(): SpanExporter {
  return new OTLPExporterBase<ReadableSpan[]>(
    createOtlpHttpExportDelegate(
      convertLegacyHttpOptions({}, 'TRACES', 'v1/traces', { 'Content-Type': 'application/x-protobuf' }),
      ProtobufTraceSerializer,
      'otlp_http_span_exporter',
      TraceExporterMetricsHelper,
      undefined,
    ),
  );
}
