import { createRequire } from 'node:module';
import type * as MySql from 'mysql2/promise';

/**
 * mysql2's promise API, loaded on first use. It is an optional peer dependency: importing
 * `lockstock/mysql` (as the contract suite's fixture processes do for every backend) must not load it
 * before a MySQL lock client is made, and a team whose locks run elsewhere never installs it.
 */
let loaded: typeof MySql | undefined;

export function mysql(): typeof MySql {
  if (loaded === undefined) {
    try {
      loaded = createRequire(import.meta.url)('mysql2/promise') as typeof MySql;
    } catch (error) {
      throw new Error(
        "lockstock's MySQL locks need the mysql2 package, which is not installed: npm install mysql2",
        { cause: error },
      );
    }
  }
  return loaded;
}

export type Pool = MySql.Pool;
export type PoolConnection = MySql.PoolConnection;
export type PoolOptions = MySql.PoolOptions;
export type ResultSetHeader = MySql.ResultSetHeader;
export type RowDataPacket = MySql.RowDataPacket;
