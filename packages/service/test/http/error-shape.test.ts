import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { signToken } from '../../src/http/auth.js';
import { saleKeys } from '../../src/sale/keys.js';
import { useSaleStack } from '../helpers/sale.js';

/**
 * Every error answer is `{ error, message }` — the routes', Fastify's (bad URL, parameter too long)
 * and Node's own (headers too large, malformed HTTP), which come from below the routes. And ids are
 * taken only in their canonical form.
 */
const env = useSaleStack();
const SECRET = 'error-shape-secret-0123456789';
let app: FastifyInstance;
let address: { host: string; port: number };
let saleId: string;
const admin = { authorization: `Bearer ${signToken(SECRET, 'root', { admin: true })}` };
const buyer = { authorization: `Bearer ${signToken(SECRET, 'ann')}` };

beforeAll(async () => {
  app = await buildApp({
    service: env.service,
    context: env.context,
    db: env.db,
    metrics: env.metrics,
    config: { jwtSecret: SECRET, rateLimitPerUser: 0, rateLimitPerIp: 0 },
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const bound = app.server.address();
  if (!bound || typeof bound === 'string') throw new Error('not listening on TCP');
  address = { host: '127.0.0.1', port: bound.port };
  saleId = (await env.service.createSale({ name: 'shape sale', stock: 5 })).id;
});
afterAll(async () => {
  await app.close();
});

/** Sends raw bytes and resolves with the whole answer (the server closes the connection). */
function raw(request: string | Buffer): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(address.port, address.host);
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', body = ''] = text.split('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), headers: head, body });
    });
    socket.end(request);
  });
}

function expectShape(body: string, code: string): void {
  const parsed = JSON.parse(body) as Record<string, unknown>;
  expect(parsed).toEqual({ error: code, message: expect.any(String) });
}

describe('ids in canonical form only', () => {
  it('refuses /api/sales/0001 instead of reading sale 1 from PostgreSQL and "0001" from Redis', async () => {
    const canonical = await app.inject({ method: 'GET', url: `/api/sales/${saleId}` });
    expect(canonical.statusCode).toBe(200);
    for (const id of [`000${saleId}`, `+${saleId}`, `${saleId}.0`, '0']) {
      const view = await app.inject({ method: 'GET', url: `/api/sales/${encodeURIComponent(id)}` });
      expect([id, view.statusCode]).toEqual([id, 400]);
      expectShape(view.body, 'bad_request');
      const buy = await app.inject({
        method: 'POST',
        url: `/api/sales/${encodeURIComponent(id)}/orders`,
        headers: buyer,
        payload: {},
      });
      expect([id, buy.statusCode]).toEqual([id, 400]);
    }
    // Nothing was created under a non-canonical id.
    expect(await env.redis.exists(saleKeys(`000${saleId}`).stock)).toBe(0);
    expect(await env.service.getSale(`000${saleId}`)).toBeUndefined();
  });

  it('answers 404 or 400 in the API shape for order ids beyond the bigint range (was a 500)', async () => {
    const cases: Array<[string, number, string]> = [
      ['99999999999999999999', 400, 'bad_request'], // 20 digits: not an order id at all
      ['9223372036854775808', 404, 'not_found'], // 2^63: no bigint holds it, so no such order
      ['9999999999999999999', 404, 'not_found'],
      ['9223372036854775807', 404, 'not_found'], // the largest bigint: a valid id nobody has
      ['007', 400, 'bad_request'],
    ];
    for (const [id, status, code] of cases) {
      const response = await app.inject({ method: 'GET', url: `/api/orders/${id}`, headers: admin });
      expect([id, response.statusCode]).toEqual([id, status]);
      expectShape(response.body, code);
    }
    expect(await env.service.getOrder('99999999999999999999')).toBeUndefined();
  });
});

describe("Fastify's and Node's own error answers", () => {
  it('answers a URL that does not decode with 400 bad_request', async () => {
    const response = await app.inject({ method: 'GET', url: '/api/sales/%E0%A4%A' });
    expect(response.statusCode).toBe(400);
    expectShape(response.body, 'bad_request');
  });

  it('answers a path parameter over maxParamLength with 414 uri_too_long', async () => {
    const response = await raw(`GET /api/sales/${'1'.repeat(500)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(response.status).toBe(414);
    expectShape(response.body, 'uri_too_long');
  });

  it('answers headers or a URL over maxHeaderSize with 431 headers_too_large', async () => {
    const bigHeader = await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(bigHeader.status).toBe(431);
    expect(bigHeader.headers).toMatch(/content-type: application\/json/i);
    expectShape(bigHeader.body, 'headers_too_large');
    const bigUrl = await raw(`GET /api/sales/1?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(bigUrl.status).toBe(431);
    expectShape(bigUrl.body, 'headers_too_large');
  });

  it('answers malformed HTTP with 400 bad_request', async () => {
    const response = await raw('NOT-HTTP\r\n\r\n');
    expect(response.status).toBe(400);
    expectShape(response.body, 'bad_request');
  });

  it('answers a request arriving while the server closes with 503 and Retry-After', async () => {
    const closing = await buildApp({
      service: env.service,
      context: env.context,
      db: env.db,
      metrics: env.metrics,
      config: { jwtSecret: SECRET, rateLimitPerUser: 0, rateLimitPerIp: 0 },
    });
    // preClose hooks run in order when closing, before the listener stops: ours (in buildApp) comes
    // first; this one then sends a request on a keep-alive connection opened before the close.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const get = (port: number) =>
      new Promise<string>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: `/api/sales/${saleId}`, agent }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve(`${res.statusCode} ${res.headers['retry-after']} ${body}`));
        });
        req.on('error', reject);
        req.end();
      });
    let port = 0;
    let answer = '';
    closing.addHook('preClose', async () => {
      answer = await get(port);
    });
    await closing.listen({ port: 0, host: '127.0.0.1' });
    port = (closing.server.address() as { port: number }).port;
    expect(await get(port)).toMatch(/^200 /);
    await closing.close();
    agent.destroy();
    expect(answer).toMatch(/^503 1 /);
    expectShape(answer.replace(/^503 1 /, ''), 'service_unavailable');
  });
});
