import type { ScriptRunner } from 'lockstock/redis';
import { ORDER_GROUP, purchasesNotBefore, type SaleKeys } from '../keys.js';
import { deadlineMember, lifecycleScripts, SETTLED_TTL_MS } from '../lifecycle/scripts.js';
import type { Sale } from '../types.js';
import { recoveryScripts } from './scripts.js';

/** Pairs per script call (Lua's unpack limit is far above; this keeps each call short). */
export const CHUNK = 500;

/** What a rebuild puts back from the record (plus the units unrecorded entries hold, in `holdings`). */
export interface RestoredState {
  /** Units each user holds. */
  readonly holdings: ReadonlyMap<string, number>;
  /** Final states of settled orders (paid, cancelled, expired). */
  readonly settled: ReadonlyArray<{ id: string; status: string }>;
  /** Orders still awaiting payment: back into the delay queue. */
  readonly unpaid: ReadonlyArray<{ id: string; userId: string; quantity: number; payByMs: number }>;
  /** Idempotency-Keys still within their time to live. */
  readonly keys: ReadonlyArray<{
    id: string;
    userId: string;
    quantity: number;
    key: string;
    secondsLeft: number;
  }>;
}

/**
 * Writes a sale's (or one part's: its keys share its hash tag) restored state into Redis, in chunks:
 * buyers' holdings (the first call empties the hash), settled orders' states, Idempotency-Keys, and the
 * unpaid orders' deadlines (open-orders.lua leaves settled ones out). Every write but the deadlines
 * is fenced by `token` (begin.lua). False if the token stopped holding half-way: whoever holds it now
 * rewrites everything.
 */
export async function restoreState(
  scripts: ScriptRunner,
  keys: Pick<SaleKeys, 'recovering' | 'buyers' | 'settled' | 'deadlines' | 'idempotency'>,
  token: string,
  state: RestoredState,
): Promise<boolean> {
  const buyers = [...state.holdings].filter(([, units]) => units > 0);
  const buyerChunks = [...chunks(buyers, CHUNK)];
  for (const [i, chunk] of (buyerChunks.length > 0 ? buyerChunks : [[]]).entries()) {
    const args = [token, i === 0 ? 1 : 0, ...chunk.flat()];
    if (!(await fenced(scripts.run(recoveryScripts.rebuildBuyers, [keys.recovering, keys.buyers], args))))
      return false;
  }
  for (const chunk of chunks(state.settled, CHUNK)) {
    const args = [token, SETTLED_TTL_MS, ...chunk.flatMap((o) => [o.id, o.status])];
    if (!(await fenced(scripts.run(recoveryScripts.rebuildSettled, [keys.recovering, keys.settled], args))))
      return false;
  }
  for (const chunk of chunks(state.keys, CHUNK)) {
    const args = [token, ...chunk.flatMap((k) => [`${k.id}:${k.quantity}`, k.secondsLeft])];
    const keyList = chunk.map((k) => keys.idempotency(k.userId, k.key));
    if (!(await fenced(scripts.run(recoveryScripts.rebuildKeys, [keys.recovering, ...keyList], args))))
      return false;
  }
  for (const chunk of chunks(state.unpaid, CHUNK)) {
    const args = chunk.flatMap((o) => [deadlineMember(o.id, o.userId, o.quantity), o.payByMs]);
    await scripts.run(lifecycleScripts.openOrders, [keys.deadlines, keys.settled], args);
  }
  return true;
}

/**
 * The rebuild's last step (finish.lua): the stock, the sale's window and limit, the stream's consumer
 * group and id `floor`; the flag goes and the restock message is published. False if the token
 * stopped holding.
 */
export async function finishRebuild(
  scripts: ScriptRunner,
  keys: Pick<SaleKeys, 'recovering' | 'stock' | 'notBefore' | 'open' | 'stream' | 'restock'>,
  token: string,
  sale: Pick<Sale, 'startsAt' | 'endsAt' | 'perUserLimit' | 'admission'>,
  remaining: number,
  floor: string,
): Promise<boolean> {
  return fenced(
    scripts.run(
      recoveryScripts.finish,
      [keys.recovering, keys.stock, keys.notBefore, keys.open, keys.stream, keys.restock],
      [
        token,
        remaining,
        purchasesNotBefore(sale),
        sale.endsAt.getTime(),
        sale.perUserLimit,
        floor,
        ORDER_GROUP,
      ],
    ),
  );
}

/** A fenced step's answer: 1 while the token holds. */
export async function fenced(step: Promise<unknown>): Promise<boolean> {
  return (await step) === 1;
}

export function* chunks<T>(items: readonly T[], size: number): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}
