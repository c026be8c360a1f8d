import { createRequire } from 'node:module';
import type * as Pg from 'pg';

/**
 * pg (node-postgres), loaded on first use. It is an optional peer dependency: importing
 * `lockstock/postgres` (as the contract suite's fixture processes do for every backend) must not load
 * it before a PostgreSQL lock client is made, and a team whose locks run elsewhere never installs it.
 * It is CommonJS: `require` returns the module object an ES import of it yields, so a user's `Pool`
 * and ours are one class.
 */
let loaded: typeof Pg | undefined;

export function pg(): typeof Pg {
  if (loaded === undefined) {
    try {
      loaded = createRequire(import.meta.url)('pg') as typeof Pg;
    } catch (error) {
      throw new Error(
        "lockstock's PostgreSQL locks need the pg package, which is not installed: npm install pg",
        {
          cause: error,
        },
      );
    }
  }
  return loaded;
}

export type Pool = Pg.Pool;
export type PoolClient = Pg.PoolClient;
