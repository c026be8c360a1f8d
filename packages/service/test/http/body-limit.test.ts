import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { useSaleStack } from '../helpers/sale.js';

const env = useSaleStack();
let app: FastifyInstance;
let port: number;

beforeAll(async () => {
  app = await buildApp({
    service: env.service,
    context: env.context,
    db: env.db,
    metrics: env.metrics,
    config: { jwtSecret: 'body-limit-secret-0123456789', rateLimitPerUser: 0, rateLimitPerIp: 0 },
  });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  port = Number(new URL(address).port);
});
afterAll(async () => {
  await app.close();
});

/**
 * Sends a whole request, body included, before reading anything (as most clients do without
 * `Expect: 100-continue`), then reads until the server closes: the status line it got, or the error.
 */
async function sendWholeThenRead(bodyBytes: number, chunked = false): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  socket.pause(); // nothing is read until the whole request is written (see below)
  let received = '';
  const outcome = new Promise<string>((resolve) => {
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('error', (error: NodeJS.ErrnoException) => resolve(`error ${error.code}`));
    socket.on('close', () => resolve(received.split('\r\n')[0] ?? ''));
  });
  const write = (data: string | Buffer) =>
    new Promise<void>((resolve) => (socket.writable ? socket.write(data, () => resolve()) : resolve()));
  const framing = chunked ? 'Transfer-Encoding: chunked\r\n' : `Content-Length: ${bodyBytes}\r\n`;
  await write(`POST /api/sales HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${framing}\r\n`);
  if (chunked) await write(`${bodyBytes.toString(16)}\r\n`);
  // In pieces, a little apart, as a body comes over a real network: the server has seen the headers
  // and answered long before the last piece. Only then does the client read; a server that closed
  // meanwhile has reset the connection, and the reset drops the answer waiting unread.
  const piece = Buffer.alloc(64 * 1024, 'a');
  for (let sent = 0; sent < bodyBytes && !socket.destroyed; sent += piece.length) {
    await write(piece.subarray(0, Math.min(piece.length, bodyBytes - sent)));
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  if (chunked) await write('\r\n0\r\n\r\n');
  socket.resume();
  return outcome;
}

describe('a body over the limit', () => {
  it('is answered 413 every time, after the client has sent it (never a reset under it)', async () => {
    const answers: string[] = [];
    for (let i = 0; i < 5; i++) answers.push(await sendWholeThenRead(2_000_000));
    answers.push(await sendWholeThenRead(2_000_000, true));
    expect(answers).toEqual(Array.from({ length: 6 }, () => 'HTTP/1.1 413 Payload Too Large'));
  });
});
