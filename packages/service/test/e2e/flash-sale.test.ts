import { RedisServer } from '@lockstock/servers';
import { flashSaleEndToEnd } from './flash-sale.js';

flashSaleEndToEnd('flash sale end to end: 3 serve + 2 worker processes, real Redis and PostgreSQL', {
  startRedis: () => RedisServer.start(),
  buyers: 20_000,
  repeats: 2_000,
  stock: 1_000,
  sales: 1,
});
