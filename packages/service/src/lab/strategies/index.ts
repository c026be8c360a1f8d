import type { Strategy } from '../types.js';
import { clusterNaiveSplit } from './cluster-naive-split.js';
import { clusterSplitSale } from './cluster-split-sale.js';
import { etcdLock, mysqlLock, postgresAdvisoryLock, zookeeperLock } from './lock-backends.js';
import { localMutex } from './local-mutex.js';
import { localMutexCommitRace } from './local-mutex-commit-race.js';
import { naiveRedis } from './naive-redis.js';
import { naiveSql } from './naive-sql.js';
import { redisLockFenced, redisLockPaused } from './lease-limits.js';
import { redisLock, redisReentrantLock } from './redis-lock.js';
import { redlock } from './redlock.js';
import { redisLockFailover } from './replica-failover.js';
import { redisLuaDecr, redisLuaGetSet, redisLuaHash } from './redis-lua.js';
import { redisLuaSegmented } from './redis-lua-segmented.js';
import { redisWatch } from './redis-watch.js';
import { service } from './service.js';
import { mysqlAtomic, sqlAtomic } from './sql-atomic.js';
import { mysqlForUpdate, sqlForUpdate } from './sql-for-update.js';
import { mysqlLockTable, sqlLockTable } from './sql-lock-table.js';
import { mysqlOptimistic, sqlOptimistic } from './sql-optimistic.js';
import { mysqlUncheckedDecrement, sqlUncheckedDecrement } from './sql-unchecked-decrement.js';
import { redisLockNoExpiry, redisLockSetnxExpire, redisLockUnownedRelease } from './unsafe-redis-locks.js';

/** Every strategy, in the order of the tour (broken first, then the remedies). */
export const STRATEGIES: readonly Strategy[] = [
  naiveRedis,
  naiveSql,
  sqlUncheckedDecrement,
  localMutex,
  localMutexCommitRace,
  sqlAtomic,
  sqlOptimistic,
  sqlForUpdate,
  sqlLockTable,
  mysqlUncheckedDecrement,
  mysqlAtomic,
  mysqlOptimistic,
  mysqlForUpdate,
  mysqlLockTable,
  redisLock,
  redisLockNoExpiry,
  redisLockSetnxExpire,
  redisLockUnownedRelease,
  redisLockPaused,
  redisLockFenced,
  redisReentrantLock,
  redlock,
  zookeeperLock,
  etcdLock,
  postgresAdvisoryLock,
  mysqlLock,
  redisLockFailover,
  redisWatch,
  redisLuaGetSet,
  redisLuaHash,
  redisLuaDecr,
  redisLuaSegmented,
  clusterNaiveSplit,
  service,
  clusterSplitSale,
];

export function strategyByName(name: string): Strategy {
  const strategy = STRATEGIES.find((s) => s.name === name);
  if (!strategy)
    throw new Error(`unknown strategy "${name}"; known: ${STRATEGIES.map((s) => s.name).join(', ')}`);
  return strategy;
}
