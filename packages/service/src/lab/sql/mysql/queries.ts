import { sqlIn } from '../../../support/assets.js';

/**
 * A statement for mysql2: its text with `?` placeholders, and which parameter (0-based) each `?`
 * takes. The files number their parameters `$1`, `$2`… as the PostgreSQL ones do, so one call site
 * passes the same parameters to either database; MySQL's placeholders are positional only.
 */
export interface MySqlStatement {
  readonly text: string;
  readonly order: readonly number[];
}

const read = sqlIn(new URL('./', import.meta.url));

/** Whole-line `--` comments go first: the headers name `$n` too. */
const withoutComments = (text: string) =>
  text
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('--'))
    .join('\n')
    .trim();

function statement(name: string): MySqlStatement {
  const order: number[] = [];
  const text = withoutComments(read(name)).replace(/\$(\d+)/g, (_, n: string) => {
    order.push(Number(n) - 1);
    return '?';
  });
  return { text, order };
}

/** The lab's tables on MySQL, one statement each (a `;` ends a line). */
export const mysqlLabSchema: readonly string[] = withoutComments(read('schema'))
  .split(/;\s*$/m)
  .map((s) => s.trim())
  .filter((s) => s.length > 0);

/** The lab's SQL strategies' statements on MySQL/MariaDB, by the names of `labQueries`. */
export const mysqlLabQueries = {
  insertStock: statement('insert-stock'),
  readStock: statement('read-stock'),
  readStockForUpdate: statement('read-stock-for-update'),
  readStockVersion: statement('read-stock-version'),
  writeStock: statement('write-stock'),
  decrementStockUnchecked: statement('decrement-stock-unchecked'),
  decrementStockIfAvailable: statement('decrement-stock-if-available'),
  decrementStockIfVersion: statement('decrement-stock-if-version'),
  insertOrder: statement('insert-order'),
  listOrders: statement('list-orders'),
  takeLockRow: statement('take-lock-row'),
  releaseLockRow: statement('release-lock-row'),
} as const;
