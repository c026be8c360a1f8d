// A resource fenced by lock tokens, kept in a znode: a write carries the writer's fencing token and is
// refused if the resource has seen a greater one (compare-and-set on the node's version, so two
// writers cannot both pass the check). Plain JS: fixture processes use it too.
import zookeeper from 'node-zookeeper-client';

const call = (fn) =>
  new Promise((resolve, reject) => fn((error, ...values) => (error ? reject(error) : resolve(values))));
const code = (error) => (typeof error?.getCode === 'function' ? error.getCode() : undefined);

/** Writes `value` under `token` unless a greater token wrote before; true if it was written. */
export async function fencedWrite(zk, path, token, value) {
  for (;;) {
    let stored;
    try {
      const [data, stat] = await call((done) => zk.getData(path, done));
      stored = { ...JSON.parse(data.toString()), version: stat.version };
    } catch (error) {
      if (code(error) !== zookeeper.Exception.NO_NODE) throw error;
      try {
        await call((done) => zk.mkdirp(path.slice(0, path.lastIndexOf('/')), done));
        await call((done) => zk.create(path, Buffer.from(JSON.stringify({ token, value })), done));
        return true;
      } catch (raced) {
        if (code(raced) !== zookeeper.Exception.NODE_EXISTS) throw raced;
        continue;
      }
    }
    if (stored.token > token) return false;
    try {
      await call((done) =>
        zk.setData(path, Buffer.from(JSON.stringify({ token, value })), stored.version, done),
      );
      return true;
    } catch (error) {
      if (code(error) !== zookeeper.Exception.BAD_VERSION) throw error;
    }
  }
}

/** What the resource holds: the last accepted write. */
export async function fencedRead(zk, path) {
  const [data] = await call((done) => zk.getData(path, done));
  return JSON.parse(data.toString());
}
