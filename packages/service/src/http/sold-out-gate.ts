import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Span } from '@opentelemetry/api';
import { contextFrom, SpanKind, tracer, tracingOn } from '../support/tracing.js';

export const SOLD_OUT_MESSAGE = 'The sale is sold out.';
/** The answer to an attempt on a sale that is sold out, serialised once. */
export const SOLD_OUT_BODY = JSON.stringify({ error: 'sold_out', message: SOLD_OUT_MESSAGE });
export const SOLD_OUT_CONTENT_TYPE = 'application/json; charset=utf-8';
const SOLD_OUT_HEADERS = {
  'content-type': SOLD_OUT_CONTENT_TYPE,
  'content-length': Buffer.byteLength(SOLD_OUT_BODY),
};

const PREFIX = '/api/sales/';
const SUFFIX = '/orders';
/** The route's name in the request-duration metric, as Fastify names it. */
export const ORDERS_ROUTE = '/api/sales/:id/orders';

export interface SoldOutGateOptions {
  /** Whether `saleId` is known to this process to be sold out (and counts the refusal if it is). */
  refuse(saleId: string): boolean;
  /** While the app closes, every request goes on to Fastify (which answers 503). */
  closing(): boolean;
  /** Counts the answer: the attempts by outcome, the request-duration metric. */
  answered(saleId: string, seconds: number): void;
}

/**
 * Whether a purchase with these headers may be answered "sold out" from memory, before Fastify. Not a
 * retry with an Idempotency-Key (it must get its original order back), and not a purchase with a
 * waiting room's admission: the buyer's active slot must be freed (the reservation path does it, from
 * memory too, once the admission is checked), or a full room would wait for it to lapse. An attacker
 * adding either header gains nothing the Idempotency-Key did not give already: the request is then
 * authenticated, rate-limited and its admission verified like any purchase.
 */
export function answersFromMemory(headers: IncomingMessage['headers']): boolean {
  return headers['idempotency-key'] === undefined && headers.admission === undefined;
}

/** The sale id of `POST /api/sales/<id>/orders` (nothing else: no query, no other method). */
function saleIdOf(request: IncomingMessage): string | undefined {
  const { url, method } = request;
  if (method !== 'POST' || url === undefined || !url.startsWith(PREFIX) || !url.endsWith(SUFFIX)) return;
  const id = url.slice(PREFIX.length, url.length - SUFFIX.length);
  return id.length > 0 && !id.includes('/') ? id : undefined;
}

/**
 * The sold-out fast path in front of Fastify. Most of a flash sale's traffic arrives after it sold
 * out, and every process learns that from Redis (sold-out.ts); here such an attempt is answered by
 * Node's HTTP server itself, before routing, hooks, the body, the token or the per-address rate limit
 * (whose Redis round trip would cost more than the answer). What it does not answer goes on to Fastify
 * unchanged, where the route's own onRequest hook gives the same answer (and `inject()`, which has no
 * server, sees only that one). A retry with an Idempotency-Key always goes on: it must get its
 * original order back; so does a purchase with an admission (see answersFromMemory).
 */
export function soldOutGate(options: SoldOutGateOptions) {
  return (request: IncomingMessage, response: ServerResponse): boolean => {
    const saleId = saleIdOf(request);
    if (saleId === undefined || !answersFromMemory(request.headers)) return false;
    if (options.closing() || !options.refuse(saleId)) return false;
    const started = performance.now();
    const span = tracingOn() ? soldOutSpan(request, response) : undefined;
    response.writeHead(409, SOLD_OUT_HEADERS);
    response.end(SOLD_OUT_BODY);
    span?.end();
    options.answered(saleId, (performance.now() - started) / 1000);
    return true;
  };
}

/**
 * The sold-out answer's SERVER span, as http/tracing.ts makes the route's (a flash sale's most common
 * answer had none), with the `traceresponse` header.
 */
function soldOutSpan(request: IncomingMessage, response: ServerResponse): Span {
  const span = tracer().startSpan(
    `POST ${ORDERS_ROUTE}`,
    {
      kind: SpanKind.SERVER,
      attributes: {
        'http.request.method': 'POST',
        'url.path': request.url ?? '',
        'url.scheme': 'http',
        'http.route': ORDERS_ROUTE,
        'http.response.status_code': 409,
        'client.address': request.socket.remoteAddress ?? '',
        'lockstock.outcome': 'sold_out',
      },
    },
    contextFrom(request.headers),
  );
  const { traceId, spanId, traceFlags } = span.spanContext();
  response.setHeader('traceresponse', `00-${traceId}-${spanId}-0${traceFlags & 1}`);
  return span;
}

/** Server settings Fastify applies to a server it creates itself (a serverFactory must apply them). */
export interface ServerTimeouts {
  keepAliveTimeout: number;
  requestTimeout: number;
  connectionTimeout: number;
}

/** A Fastify `serverFactory`: Node's HTTP server with the gate in front of Fastify's handler. */
export function gatedServerFactory(gate: ReturnType<typeof soldOutGate>, timeouts: ServerTimeouts) {
  return (handler: (request: IncomingMessage, response: ServerResponse) => void): Server => {
    const server = createServer((request, response) => {
      if (!gate(request, response)) handler(request, response);
    });
    server.keepAliveTimeout = timeouts.keepAliveTimeout;
    server.requestTimeout = timeouts.requestTimeout;
    server.setTimeout(timeouts.connectionTimeout);
    return server;
  };
}
