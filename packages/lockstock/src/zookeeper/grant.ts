/** A grant of a queue node (its token and the watch that loses it) and its release, for every queue kind. */
import * as zookeeper from 'node-zookeeper-client';
import type { Stat } from 'node-zookeeper-client';
import {
  Busy,
  Granted,
  type AttemptResult,
  type LockLostReason,
  type ReleaseResult,
} from '../backend/index.js';
import type { OwnNode, OwnNodes } from './nodes.js';
import { tokenOf } from './paths.js';
import { codeOf, NO_NODE } from './session.js';

/** Our node as a read that armed its watch saw it: its stat (undefined: gone), and the watch's loss. */
export interface SeenNode {
  readonly stat: Stat | undefined;
  readonly lost: Promise<LockLostReason>;
}

/**
 * A watcher for our own node: `lost` settles when the node is deleted behind our back (forceUnlock,
 * an admin), and the node is marked gone. Any other event (nobody writes lock nodes, but an admin
 * might) re-arms it.
 */
export function watchOwnNode(
  nodes: OwnNodes,
  node: OwnNode,
): { watcher: (event: zookeeper.Event) => void; lost: Promise<LockLostReason> } {
  let onDeleted!: () => void;
  const lost = new Promise<LockLostReason>((resolve) => (onDeleted = () => resolve('expired')));
  const deleted = () => {
    node.gone = true;
    onDeleted();
  };
  const watcher = (event: zookeeper.Event) => {
    const path = event.getPath();
    if (path !== node.path) return; // a node this one had before it vanished and was made again
    if (event.getType() === zookeeper.Event.NODE_DELETED) return deleted();
    void nodes.session.exists(path, watcher).then(
      (stat) => stat ?? deleted(),
      () => undefined,
    );
  };
  return { watcher, lost };
}

/**
 * The node holds: its token (czxid), and a watch on it that loses the hold if the node is deleted
 * behind our back — both from `seen` when the read sent with the create armed it, else from one
 * `exists`. Not granted if the connection was lost (or the session ended) while we looked.
 */
export async function grantNode(
  nodes: OwnNodes,
  node: OwnNode,
  options: {
    trust: number;
    waiting: boolean;
    shared: boolean;
    internal?: boolean | undefined;
    seen?: SeenNode | undefined;
  },
): Promise<AttemptResult | 'vanished'> {
  const { session } = nodes;
  let lost: Promise<LockLostReason> | undefined;
  let token = 0;
  if (!options.internal) {
    let stat: Stat | undefined;
    if (options.seen) ({ stat, lost } = options.seen);
    else {
      const own = watchOwnNode(nodes, node);
      lost = own.lost;
      stat = await session.exists(node.path as string, own.watcher);
    }
    if (stat === undefined) return 'vanished';
    token = tokenOf(stat);
  }
  if (session.trust !== options.trust || node.generation !== session.generation) {
    if (!options.waiting || node.generation !== session.generation) {
      nodes.abandonLater(node);
      return new Busy(undefined);
    }
    return session.rideOut(); // still queued: look again once back (bounded by the connect timeout)
  }
  node.holds = 1;
  node.token = token;
  node.lost = lost;
  return new Granted(token, options.shared, lost);
}

/** Releases the owner's hold of `key`: one re-entry, or its node. */
export async function releaseNode(nodes: OwnNodes, key: string): Promise<ReleaseResult> {
  const { node } = nodes.current(key);
  if (node === undefined || node.holds === 0) return { outcome: 'expired' };
  if (node.gone) {
    node.drop();
    return { outcome: 'expired' };
  }
  if (node.holds > 1) {
    node.holds--;
    return { outcome: 'still_held' };
  }
  node.drop();
  // Alone in its queue: the parent's guard goes out before the delete (see QuietQueues).
  const quiet = node.alone && node.generation === nodes.session.generation;
  if (quiet) nodes.quiet.arm(node.parent);
  try {
    await nodes.session.remove(node.path as string);
  } catch (error) {
    if (codeOf(error) === NO_NODE) return { outcome: 'expired' };
    nodes.abandonLater(node); // retried on reconnection: the lock must not stay taken
    throw error;
  }
  if (quiet) nodes.quiet.released(node.parent, node.name as string);
  return { outcome: 'released' };
}
