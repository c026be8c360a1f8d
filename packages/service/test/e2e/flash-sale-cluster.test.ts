import { RedisCluster } from '@lockstock/servers';
import { flashSaleEndToEnd } from './flash-sale.js';

// The same sale on a 3-master Redis Cluster: `--redis redis-cluster://…`, two sales at once (their
// keys and streams on different slots), every process an ioredis Cluster client.
flashSaleEndToEnd('flash sale end to end on a 3-master Redis Cluster', {
  async startRedis() {
    const cluster = await RedisCluster.start({ masters: 3 });
    const nodes = cluster.startupNodes.map((n) => `${n.host}:${n.port}`).join(',');
    return { url: `redis-cluster://${nodes}`, stop: () => cluster.stop() };
  },
  buyers: 6_000,
  repeats: 600,
  stock: 300,
  sales: 2,
});
