import { context, trace, type Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { contextFrom, SpanKind, SpanStatusCode, tracer, tracingOn } from '../support/tracing.js';

const spans = new WeakMap<FastifyRequest, Span>();

/**
 * A SERVER span per request, the caller's trace continued when it sent `traceparent`, named by the
 * route as OpenTelemetry's HTTP conventions ask (`POST /api/sales/:id/orders`). Registered only when
 * tracing is on (cli/tracing.ts); the rest of the request — rate limits, the reservation — runs inside
 * it: `done` is called within the span's context, and the AsyncLocalStorage context manager carries it
 * through the handler's awaits.
 */
export function registerRequestTracing(app: FastifyInstance): void {
  if (!tracingOn()) return;
  app.addHook('onRequest', (request, _reply, done) => {
    const route = request.routeOptions.url;
    const span = tracer().startSpan(
      route ? `${request.method} ${route}` : request.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': request.method,
          'url.path': request.url.split('?')[0],
          ...(route ? { 'http.route': route } : {}),
          'client.address': request.ip,
        },
      },
      contextFrom(request.headers),
    );
    spans.set(request, span);
    context.with(trace.setSpan(context.active(), span), done);
  });
  app.addHook('onResponse', (request, reply, done) => {
    const span = spans.get(request);
    if (span) {
      span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
    done();
  });
}
