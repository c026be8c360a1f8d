import { createRequire } from 'node:module';
import type * as Etcd3Module from 'etcd3';

/**
 * etcd3, loaded on first use. It is an optional peer dependency: importing `lockstock/etcd` (as the
 * contract suite's fixture processes do for every backend) must not load it — nor gRPC and protobuf
 * with it — before an etcd lock client is made. It is CommonJS: `require` returns the module object an
 * ES import of it yields, so a user's `Etcd3` and ours are one class.
 */
let loaded: typeof Etcd3Module | undefined;

export function etcd3(): typeof Etcd3Module {
  if (loaded === undefined) {
    try {
      loaded = createRequire(import.meta.url)('etcd3') as typeof Etcd3Module;
    } catch (error) {
      throw new Error(
        "lockstock's etcd locks need the etcd3 package, which is not installed: npm install etcd3",
        {
          cause: error,
        },
      );
    }
  }
  return loaded;
}
