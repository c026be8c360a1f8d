import type { RedisClient } from '../connection.js';
import { ScriptRunner, loadLuaScript } from '../scripts.js';
import {
  Busy,
  clockDriftMs,
  Granted,
  monotonicNow,
  type AttemptRequest,
  type AttemptResult,
  type ExtendStatus,
  type LockInfo,
  type LockResource,
  type ReleaseResult,
} from '../../backend/index.js';
import type { FencingTokenSource } from './token-source.js';
import { countVotes, QuorumUnavailableError, type Vote } from './votes.js';

const lua = (file: string) => loadLuaScript(new URL(`./lua/${file}`, import.meta.url));
const SCRIPTS = {
  release: lua('redlock-release.lua'),
  extend: lua('redlock-extend.lua'),
};

/** One independent master. */
export interface RedlockNode {
  readonly label: string;
  readonly client: RedisClient;
  readonly scripts: ScriptRunner;
}

/** How long a first connection to a master may take before its vote counts as an error. */
const CONNECT_GRACE_MS = 2_000;

/**
 * A master's vote may only be asked once its connection is up: a new connection gets a grace period
 * to come up; a master known to be down (reconnecting) answers 'error' at once instead of having the
 * request queued behind its reconnection.
 */
async function whenConnected(node: RedlockNode): Promise<void> {
  const { client } = node;
  if (client.status === 'ready') return;
  if (client.status !== 'wait' && client.status !== 'connecting' && client.status !== 'connect') {
    throw new Error(`${node.label} is ${client.status}`);
  }
  if (client.status === 'wait') void client.connect().catch(() => undefined);
  await withTimeout(
    new Promise<void>((resolve, reject) => {
      client.once('ready', resolve);
      client.once('error', reject);
    }),
    CONNECT_GRACE_MS,
    node.label,
  );
}

/** Rejects after `ms` (a master that hangs — paused, partitioned — must not stall the vote). */
function withTimeout<T>(work: Promise<T>, ms: number, label: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${label} did not answer within ${ms} ms`)), ms);
    timer.unref(); // a hanging master must not keep a finished script alive
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * The clients' node lists whose first connections have settled (see firstQuorum): read before the
 * promise so that every attempt after the first goes on without awaiting it (an await of a settled
 * promise still costs each vote a microtask turn on the hot path).
 */
const FIRST_CONNECTS_SETTLED = new WeakSet<readonly RedlockNode[]>();
const FIRST_CONNECTS = new WeakMap<readonly RedlockNode[], Promise<void>>();

/**
 * Before a client's first vote: wait until a quorum of its masters is connected, or every master's
 * first connection has settled (up or failed), or the connect grace is over — whichever comes first.
 * The vote's own timer (nodeTimeoutMs, 50 ms by default) is sized for a round trip, not for a TCP and
 * HELLO handshake: without this, a client's first acquire on a loaded machine found every master
 * "not answering" and failed with QuorumUnavailableError. Only the first connection waits: a master
 * that goes down later is reconnecting, and its vote is an error at once (whenConnected), so an
 * attempt never waits on a dead master past its timer. Once per client (its node list is shared by
 * all its resources).
 */
function firstQuorum(nodes: readonly RedlockNode[], quorum: number): Promise<void> {
  let settled = FIRST_CONNECTS.get(nodes);
  if (settled === undefined) {
    settled = new Promise<void>((resolve) => {
      let up = 0;
      let done = 0;
      const finish = () => {
        clearTimeout(timer);
        FIRST_CONNECTS_SETTLED.add(nodes);
        resolve();
      };
      const timer = setTimeout(finish, CONNECT_GRACE_MS);
      timer.unref();
      for (const node of nodes) {
        whenConnected(node).then(
          () => {
            done++;
            if (++up >= quorum || done === nodes.length) finish();
          },
          () => {
            if (++done === nodes.length) finish();
          },
        );
      }
    });
    FIRST_CONNECTS.set(nodes, settled);
  }
  return settled;
}

/**
 * Replies of one request on every node, as votes; a node that fails is an 'error' vote, never a
 * throw, and one that has not answered within `timeoutMs` (paused, partitioned) is an 'error' vote
 * too — the vote does not wait for it. One timer for the whole vote, not one per master: with five
 * masters per acquire and per release, per-master timers and races were a large share of the
 * client's CPU.
 */
function poll(
  nodes: readonly RedlockNode[],
  timeoutMs: number,
  run: (node: RedlockNode) => Promise<unknown>,
  classify: (reply: unknown) => Vote['vote'] | { remainingMs: number | undefined },
): Promise<Vote[]> {
  return new Promise((resolve) => {
    const votes: Array<Vote | undefined> = new Array<Vote | undefined>(nodes.length);
    let left = nodes.length;
    const settle = (i: number, vote: Vote) => {
      if (votes[i] !== undefined || left === 0) return;
      votes[i] = vote;
      if (--left === 0) {
        clearTimeout(timer);
        resolve(votes as Vote[]);
      }
    };
    const timer = setTimeout(() => {
      nodes.forEach((node, i) =>
        settle(i, errorVote(node, new Error(`${node.label} did not answer within ${timeoutMs} ms`))),
      );
    }, timeoutMs);
    nodes.forEach((node, i) => {
      let asked: Promise<unknown>;
      try {
        asked = node.client.status === 'ready' ? run(node) : whenConnected(node).then(() => run(node));
      } catch (error) {
        asked = Promise.reject(error as Error); // still a vote: an 'error' one
      }
      asked.then(
        (reply) => settle(i, voteOf(node, classify(reply))),
        (error: unknown) => settle(i, errorVote(node, error)),
      );
    });
  });
}

function voteOf(node: RedlockNode, verdict: Vote['vote'] | { remainingMs: number | undefined }): Vote {
  if (typeof verdict === 'object')
    return { node: node.label, vote: 'held', remainingMs: verdict.remainingMs };
  if (verdict === 'error') return errorVote(node, new Error('unexpected reply'));
  return { node: node.label, vote: verdict } as Vote;
}

function errorVote(node: RedlockNode, error: unknown): Vote {
  return {
    node: node.label,
    vote: 'error',
    error: error instanceof Error ? error : new Error(String(error)),
  };
}

/**
 * One master's vote, as the Redis distributed-lock spec gives it: `SET key owner PX lease NX` (a plain
 * command: EVALSHA of a script wrapping it cost each master more, and Redlock asks five). Refused, the
 * holder's remaining lease comes from a PTTL: 1 granted, else {pttl} (-1: no expiry, -2: gone since).
 */
async function vote(node: RedlockNode, key: string, owner: string, leaseMs: number): Promise<unknown> {
  const reply = await node.scripts.command('set', [key, owner, 'PX', leaseMs, 'NX']);
  if (reply === 'OK') return 1;
  return [await node.scripts.command('pttl', [key])];
}

/** An acquire's {pttl} reply: the lease left, or undefined when the key has no expiry (PTTL -1). */
function remaining(reply: unknown): number | undefined {
  const pttl = Number((reply as unknown[])[0]);
  return pttl === -1 ? undefined : Math.max(0, pttl);
}

const byCode = (reply: unknown) => {
  const code = Number(reply);
  return code === 1 || code === 0 ? ('yes' as const) : code === -2 ? { remainingMs: 0 } : ('gone' as const);
};

/**
 * Redlock (the Redis distributed-lock spec) as a lock resource: a hold is a majority of independent
 * masters agreeing within the lease, measured on the monotonic clock from before the first request
 * (validity = lease − elapsed − drift; the hold's lease carries the same rule). A failed attempt
 * releases whatever it got everywhere. Extends must reach a majority again or the hold is lost.
 */
export class RedlockResource implements LockResource {
  readonly waitKey: string;
  readonly wakeChannel = undefined; // independent masters: waiters back off and retry
  readonly leases = 'renewable' as const;
  readonly handsOff = false;
  private readonly keys: readonly string[];
  private readonly quorum: number;

  constructor(
    private readonly nodes: readonly RedlockNode[],
    readonly name: string,
    keyPrefix: string,
    private readonly fencing: FencingTokenSource | undefined,
    /** How long one master may take to answer before its vote counts as an error. */
    private readonly nodeTimeoutMs: number,
  ) {
    this.waitKey = `${keyPrefix}:{${name}}:redlock`;
    this.keys = [this.waitKey];
    this.quorum = Math.floor(nodes.length / 2) + 1;
  }

  async attempt({ owner, leaseMs }: AttemptRequest): Promise<AttemptResult> {
    const lease = leaseMs ?? 0;
    if (!FIRST_CONNECTS_SETTLED.has(this.nodes)) await firstQuorum(this.nodes, this.quorum);
    const startedAt = monotonicNow();
    const votes = await poll(
      this.nodes,
      this.nodeTimeoutMs,
      (node) => vote(node, this.waitKey, owner, lease),
      (reply) => (Number(reply) === 1 ? 'yes' : { remainingMs: remaining(reply) }),
    );
    const validityMs = lease - (monotonicNow() - startedAt) - clockDriftMs(lease);
    if (countVotes(votes, 'yes') >= this.quorum && validityMs > 0) {
      try {
        return new Granted(this.fencing ? await this.fencing.next(this.name) : 0, false);
      } catch (error) {
        await this.release(owner);
        throw error;
      }
    }
    // No majority in time: give back what we got, so others (and our retry) are not blocked by it.
    if (countVotes(votes, 'yes') > 0) await this.release(owner);
    if (countVotes(votes, 'error') > this.nodes.length - this.quorum) {
      throw new QuorumUnavailableError(this.name, this.quorum, votes);
    }
    // Held elsewhere: the waiter backs off (jittered), never past the first of those leases to end. A
    // key without expiry (left by another tool, or PERSISTed) gives no hint: plain back-off, not 0 ms.
    const held = votes.flatMap((v) =>
      v.vote === 'held' && v.remainingMs !== undefined ? [v.remainingMs] : [],
    );
    return new Busy(held.length > 0 ? Math.min(...held) : undefined);
  }

  async release(owner: string): Promise<ReleaseResult> {
    const votes = await poll(
      this.nodes,
      this.nodeTimeoutMs,
      (node) => node.scripts.run(SCRIPTS.release, this.keys, [owner]),
      byCode,
    );
    // A majority held by another owner: this hold was over whatever a minority master still kept of
    // it (its key there may outlive the others by the skew of their expiries; deleting it is right,
    // but the caller did not hold the lock). Seen under load: a resumed holder's release was told
    // 'released' while the next holder held three of five masters.
    if (countVotes(votes, 'held') >= this.quorum) return { outcome: 'not_owner' };
    if (countVotes(votes, 'yes') > 0) return { outcome: 'released' };
    if (countVotes(votes, 'held') > 0) return { outcome: 'not_owner' };
    return { outcome: 'expired' };
  }

  async extend(owner: string, leaseMs: number): Promise<ExtendStatus> {
    const startedAt = monotonicNow();
    const votes = await poll(
      this.nodes,
      this.nodeTimeoutMs,
      (node) => node.scripts.run(SCRIPTS.extend, this.keys, [owner, leaseMs]),
      byCode,
    );
    const validityMs = leaseMs - (monotonicNow() - startedAt) - clockDriftMs(leaseMs);
    if (countVotes(votes, 'yes') >= this.quorum && validityMs > 0) {
      await this.retake(votes, owner, leaseMs);
      return 'extended';
    }
    return countVotes(votes, 'held') >= this.quorum ? 'taken' : 'expired';
  }

  /**
   * A majority still holds the lock for `owner`: where a master lost its vote (it restarted without
   * persistence, or failed over), take the vote there again, as an acquire would (SET NX: nobody else
   * holds it there). Otherwise a long hold is lost after enough rolling restarts although a majority
   * held it throughout (redis-semaphore does the same). Only under a majority: a key deleted on most
   * masters (forceUnlock, an ended lease) is not brought back. Best effort: the extend stands anyway.
   */
  private async retake(votes: readonly Vote[], owner: string, leaseMs: number): Promise<void> {
    const gone = this.nodes.filter((node, i) => votes[i]?.vote === 'gone' && node.client.status === 'ready');
    if (gone.length === 0) return;
    await poll(
      gone,
      this.nodeTimeoutMs,
      (node) => vote(node, this.waitKey, owner, leaseMs),
      () => 'yes',
    );
  }

  /** Held when a majority of the masters that answered hold it. */
  async inspect(): Promise<LockInfo> {
    const ttls = await Promise.all(this.nodes.map((node) => node.client.pttl(this.waitKey).catch(() => -2)));
    const held = ttls.filter((ttl) => ttl !== -2).sort((a, b) => b - a);
    const ok = held.length >= this.quorum;
    return {
      held: ok,
      holders: ok ? 1 : 0,
      remainingMs: ok ? Math.max(0, held[this.quorum - 1]!) : undefined,
    };
  }

  leave(): void {
    // Waiters queue nowhere.
  }
}
