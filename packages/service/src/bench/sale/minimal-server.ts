/**
 * Child process of the HTTP benchmark: the minimal correct purchase endpoint a user would write by
 * hand instead of lockstock (issue 28's reference) — Fastify, fast-jwt verifying each buyer's HS256
 * token on every request, one ioredis connection, the widely copied hm-dianping seckill script by
 * EVALSHA, order ids from a local counter. No time window, no idempotency keys, no rate limits, no
 * metrics, no recovery, no order pipeline.
 *
 * argv: port, Redis URL, JWT secret, the id of a sale with stock and of a sold-out one (seeded here).
 */
import Fastify from 'fastify';
import { createVerifier } from 'fast-jwt';
import { Redis } from 'ioredis';
import { loadLuaScript } from 'lockstock/redis';

const [port, redisUrl, secret, openSale, soldOutSale] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
];
const script = loadLuaScript(new URL('./hm-dianping-seckill.lua', import.meta.url));
const redis = new Redis(redisUrl);
const sha = (await redis.script('LOAD', script.source)) as string;
await redis.set(`seckill:stock:${openSale}`, 10_000_000);
await redis.set(`seckill:stock:${soldOutSale}`, 0);

const verify = createVerifier({ key: secret, algorithms: ['HS256'] });
let nextOrderId = 0;
const prefix = `${process.pid}-`;

const app = Fastify();
app.post<{ Params: { id: string } }>('/api/sales/:id/orders', async (request, reply) => {
  const header = request.headers.authorization;
  let userId: string;
  try {
    userId = String((verify(header?.slice(7) ?? '') as { sub: string }).sub);
  } catch {
    return reply.code(401).send({ error: 'unauthorized', message: 'A valid bearer token is needed.' });
  }
  const orderId = `${prefix}${++nextOrderId}`;
  const result = Number(await redis.evalsha(sha, 0, request.params.id, userId, orderId));
  if (result === 0) return reply.code(202).send({ orderId });
  if (result === 1) return reply.code(409).send({ error: 'sold_out', message: 'Sold out.' });
  return reply.code(409).send({ error: 'limit_reached', message: 'Already bought.' });
});
app.get('/ready', async () => ({ ready: true }));
await app.listen({ port: Number(port), host: '127.0.0.1' });

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void (async () => {
      await app.close();
      // What it wrote: the benchmark's Redis is shared with the other servers measured.
      await redis.del(
        `seckill:stock:${openSale}`,
        `seckill:stock:${soldOutSale}`,
        `seckill:order:${openSale}`,
        `seckill:order:${soldOutSale}`,
        'stream.orders',
      );
      redis.disconnect();
    })();
  });
}
