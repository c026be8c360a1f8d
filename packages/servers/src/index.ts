/**
 * @lockstock/servers: starting real servers on free loopback ports, for tests, the lab, benchmarks
 * and the embedded default of `lockstock serve`. A workspace package of its own (it was the
 * `lockstock/servers` subpath until 0.4.0): the lock library ships no test launchers.
 */
export { MissingBinaryError, ServerStartError } from './errors.js';
export { freePort, freePorts } from './ports.js';
export { freezeProcess } from './freeze.js';
export { PeerNetwork } from './peer-network.js';
export { RedisServer, startRedisServers, findRedisServer, type RedisServerOptions } from './redis.js';
export { PostgresServer, findPostgresBinDir, type PostgresServerOptions } from './postgres.js';
export { PgBouncerServer, findPgBouncer, type PgBouncerServerOptions } from './pgbouncer.js';
export {
  MariaDbServer,
  findMariaDb,
  mysqlGreets,
  type MariaDbServerOptions,
  type MariaDbInstallation,
} from './mariadb.js';
export { installDebianPackages, whichExecutable } from './packages.js';
export { RedisCluster, type RedisClusterOptions } from './cluster.js';
export { RedisSentinelGroup, type SentinelGroupOptions } from './sentinel.js';
export { fourLetterWord, httpRequest, modeOf, type HttpAnswer } from './probes.js';
export {
  ZooKeeperServer,
  ZooKeeperEnsemble,
  ZooKeeperNode,
  findZooKeeper,
  type ZooKeeperServerOptions,
  type ZooKeeperEnsembleOptions,
  type ZooKeeperInstallation,
} from './zookeeper.js';
export {
  EtcdServer,
  EtcdCluster,
  findEtcd,
  type EtcdServerOptions,
  type EtcdClusterOptions,
} from './etcd.js';
export {
  PrometheusServer,
  findPrometheus,
  findPromtool,
  promtool,
  type PrometheusServerOptions,
  type PrometheusSample,
} from './prometheus.js';
