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
  app.addHook('onRequest', (request, reply, done) => {
    const route = request.routeOptions.url;
    // Scrapes and probes are not traced: one a second per scraper, every one alike.
    if (route !== undefined && UNTRACED_ROUTES.has(route)) {
      done();
      return;
    }
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
              'url.scheme': request.protocol,
              'http.route': route,
              'client.address': request.ip,
            }
          : {
              'http.request.method': method,
              'url.path': query === -1 ? url : url.slice(0, query),
              'url.scheme': request.protocol,
              'client.address': request.ip,
            },
      },
      parent,
    );
    request.traceSpan = span;
    request.traceContext = trace.setSpan(parent, span);
    // The caller learns the trace of its answer (W3C Trace Context level 2 `traceresponse`), to quote
    // it in a report; sampled or not, as the flags say.
    const { traceId, spanId, traceFlags } = span.spanContext();
    reply.header('traceresponse', `00-${traceId}-${spanId}-0${traceFlags & 1}`);
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    const span = request.traceSpan;
    if (span) {
      request.traceSpan = undefined;
      span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) {
        // HTTP semantic conventions: a server error's type is its status code.
        span.setAttribute('error.type', String(reply.statusCode));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    }
    done();
  });
  // A client that gave up before its answer: the span ends now, or its children (the reservation,
  // exported when they end) would have a parent nobody ever receives.
  app.addHook('onRequestAbort', (request, done) => {
    const span = request.traceSpan;
    if (span) {
      request.traceSpan = undefined;
      span.setAttribute('error.type', 'client_aborted');
      span.end();
    }
    done();
  });
}

/** Routes without a span (and without request logs: see routes/health.ts). */
export const UNTRACED_ROUTES: ReadonlySet<string> = new Set(['/metrics', '/healthz']);

/** The request's trace context (its SERVER span's), or undefined when tracing is off. */
export function traceContextOf(request: FastifyRequest): Context | undefined {
  return request.traceContext;
}
