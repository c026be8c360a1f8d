import { decodeHolder, encodeHolder, type HolderMetadata, type LockHolderInfo } from '../backend/index.js';
import type { QueueEntry } from './paths.js';
import { codeOf, NO_NODE, type ZooKeeperSession } from './session.js';

/**
 * The data of a queue node (a lock's waiter or holder, a semaphore's lease): the holder's record
 * (encodeHolder) when its attempt carried one — written with the create, so it costs no extra write —
 * else the owner alone, as every node was written before records were kept (and as an internal gate's
 * still is). Curator likewise puts something of the holder's in its lock nodes (the local address).
 */
export function nodeData(owner: string, holder: HolderMetadata | undefined): Buffer {
  return Buffer.from(holder === undefined ? owner : encodeHolder(owner, holder));
}

/**
 * Who a queue node's data names: its record, or — data that is not one (a node of an earlier build,
 * which wrote its owner alone) — the data itself as the owner. Every reader of node data goes here.
 */
export function holderOfData(data: Buffer): LockHolderInfo {
  return decodeHolder(data) ?? { owner: data.toString('utf8') };
}

/**
 * The holders named by the nodes `entries` under `parent`: one getData each, sent together (the
 * driver pipelines them). A node deleted since the children were listed (released, or its session
 * ended) is skipped: it holds no more.
 */
export async function readHolders(
  session: ZooKeeperSession,
  parent: string,
  entries: readonly QueueEntry[],
): Promise<LockHolderInfo[]> {
  const read = await Promise.all(
    entries.map(async ({ name }) => {
      try {
        return holderOfData((await session.getData(`${parent}/${name}`)).data);
      } catch (error) {
        if (codeOf(error) === NO_NODE) return undefined;
        throw error;
      }
    }),
  );
  return read.filter((holder) => holder !== undefined);
}
