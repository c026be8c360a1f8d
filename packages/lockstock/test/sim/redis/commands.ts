import type { RedisModel } from './model.js';
import { RedisError, type Reply } from './reply.js';

/**
 * The commands of the model by name, with Redis's arity checks (a script that calls one with the
 * wrong number of arguments fails as on a real server).
 */
type Handler = (model: RedisModel, args: readonly string[]) => Reply;

/** Argument count checks as Redis's command table has them (arity: exact, or at least -n). */
function arity(name: string, n: number, run: Handler): Handler {
  return (model, args) => {
    const count = args.length + 1;
    if (n >= 0 ? count !== n : count < -n)
      throw new RedisError(`ERR wrong number of arguments for '${name}' command`);
    return run(model, args);
  };
}

export const COMMANDS: Record<string, Handler> = {
  get: arity('get', 2, (m, [k]) => m.get(k!)),
  mget: arity('mget', -2, (m, keys) => keys.map((k) => (m.exists([k]) ? m.get(k) : null))),
  set: arity('set', -3, (m, args) => m.set(args)),
  del: arity('del', -2, (m, keys) => m.del(keys)),
  exists: arity('exists', -2, (m, keys) => m.exists(keys)),
  incr: arity('incr', 2, (m, [k]) => m.incrBy(k!, 1)),
  decr: arity('decr', 2, (m, [k]) => m.incrBy(k!, -1)),
  pexpire: arity('pexpire', -3, (m, [k, ms, ...rest]) => {
    if (rest.length > 1)
      throw new RedisError('ERR NX and XX, GT or LT options at the same time are not compatible');
    return m.pexpire(k!, ms!, rest[0]);
  }),
  pttl: arity('pttl', 2, (m, [k]) => m.pttl(k!)),
  persist: arity('persist', 2, (m, [k]) => m.persist(k!)),
  time: arity('time', 1, (m) => m.time()),
  spublish: arity('spublish', 3, (m, [c, msg]) => m.spublish(c!, msg!)),
  hset: arity('hset', -4, (m, [k, ...pairs]) => m.hset(k!, pairs)),
  hsetnx: arity('hsetnx', 4, (m, [k, f, v]) => m.hset(k!, [f!, v!], true)),
  hget: arity('hget', 3, (m, [k, f]) => m.hget(k!, f!)),
  hmget: arity('hmget', -3, (m, [k, ...fs]) => fs.map((f) => m.hget(k!, f))),
  hexists: arity('hexists', 3, (m, [k, f]) => (m.hget(k!, f!) === null ? 0 : 1)),
  hdel: arity('hdel', -3, (m, [k, ...fs]) => m.hdel(k!, fs)),
  hgetall: arity('hgetall', 2, (m, [k]) => m.hgetall(k!)),
  hincrby: arity('hincrby', 4, (m, [k, f, by]) => m.hincrby(k!, f!, by!)),
  zadd: arity('zadd', -4, (m, [k, ...rest]) => m.zadd(k!, rest)),
  zrem: arity('zrem', -3, (m, [k, ...members]) => m.zrem(k!, members)),
  zcard: arity('zcard', 2, (m, [k]) => (m.zrange(k!, '0', '-1', []) as Reply[]).length),
  zrange: arity('zrange', -4, (m, [k, a, b, ...rest]) => m.zrange(k!, a!, b!, rest)),
  zrangebyscore: arity('zrangebyscore', -4, (m, [k, a, b, ...rest]) => m.zrangebyscore(k!, a!, b!, rest)),
  zremrangebyscore: arity('zremrangebyscore', 4, (m, [k, a, b]) => m.zremrangebyscore(k!, a!, b!)),
  zpopmin: arity('zpopmin', 2, (m, [k]) => m.zpopmin(k!)),
  zscore: arity('zscore', 3, (m, [k, member]) => m.zscore(k!, member!)),
};
