/**
 * Child process of the HTTP benchmark: serves either the lockstock API (rate limits off, pipeline off)
 * or a hello-world Fastify route taking the same request, then prints "ready <port>".
 */
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import { buildApp } from '../../http/app.js';
import { SnowflakeIdGenerator } from '../../sale/ids/snowflake.js';
import { createSaleMetrics } from '../../sale/metrics.js';
import { SaleService } from '../../sale/service.js';
import { postgresDatabase } from '../../sale/store/db.js';

const [mode, port, redisUrl, databaseUrl, secret] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
];

async function main(): Promise<void> {
  if (mode === 'hello') {
    const app = Fastify();
    app.post('/hello', async () => ({ hello: 'world' }));
    await app.listen({ port: Number(port), host: '127.0.0.1' });
  } else {
    const redis = new Redis(redisUrl);
    const db = postgresDatabase(databaseUrl);
    const ids = new SnowflakeIdGenerator(redis);
    await ids.start();
    const metrics = createSaleMetrics();
    const service = new SaleService({ redis, db, nextOrderId: () => ids.next(), metrics });
    const app = await buildApp({
      service,
      redis,
      db,
      metrics,
      config: { jwtSecret: secret, rateLimitPerIp: 0, rateLimitPerUser: 0 },
    });
    await app.listen({ port: Number(port), host: '127.0.0.1' });
  }
  process.stdout.write(`ready ${port}\n`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
