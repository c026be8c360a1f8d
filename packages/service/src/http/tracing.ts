import { trace, type Context, type Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { contextFrom, SpanKind, SpanStatusCode, tracer, tracingOn } from '../support/tracing.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's SERVER span and its context, when tracing is on (http/tracing.ts). */
    traceSpan?: Span;
    traceContext?: Context;
  }
}

/**
 * A SERVER span per request, the caller's trace continued when it sent `traceparent`, named by the
 * route as OpenTelemetry's HTTP conventions ask (`POST /api/sales/:id/orders`). Registered only when
 * tracing is on (cli/tracing.ts). The span's context is kept on the request (`traceContextOf`) and
 * handed on by hand — the purchase route gives it to `buy` — rather than through a context manager
 * (support/tracing.ts says why).
 */
export function registerRequestTracing(app: FastifyInstance): void {
  if (!tracingOn()) return;
  app.decorateRequest('traceSpan', undefined);
  app.decorateRequest('traceContext', undefined);
  app.addHook('onRequest', (request, _reply, done) => {
    const route = request.routeOptions.url;
    const method = request.method;
    const url = request.url;
    const query = url.indexOf('?');
    const parent = contextFrom(request.headers);
    const span = tracer().startSpan(
      route ? `${method} ${route}` : method,
      {
        kind: SpanKind.SERVER,
        attributes: route
          ? {
              'http.request.method': method,
              'url.path': query === -1 ? url : url.slice(0, query),
              'http.route': route,
              'client.address': request.ip,
            }
          : {
              'http.request.method': method,
              'url.path': query === -1 ? url : url.slice(0, query),
              'client.address': request.ip,
            },
      },
      parent,
    );
    request.traceSpan = span;
    request.traceContext = trace.setSpan(parent, span);
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    const span = request.traceSpan;
    if (span) {
      span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
    done();
  });
}

/** The request's trace context (its SERVER span's), or undefined when tracing is off. */
export function traceContextOf(request: FastifyRequest): Context | undefined {
  return request.traceContext;
}
