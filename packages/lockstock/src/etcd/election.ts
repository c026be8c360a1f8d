import type { IEvent } from 'etcd3';
import { LockElection, proclaimedValue } from '../backend/index.js';
import { setTimer } from '../support/timer.js';
import { InvalidLockOptionError } from '../locks/errors.js';
import type { Election, Leader, Lock, Term } from '../locks/types.js';
import { ownerOf } from './keys.js';
import type { EtcdContext } from './resource.js';
import { createdAt, keyOf, rangeByCreation, revisionOf } from './store.js';

/**
 * Leader election on etcd: campaigns and terms are LockElection's (a term is a hold of a mutex in
 * the election's own queue; its token the key's create revision, Go's `Election.Rev()`), and the
 * leader is the queue's first key. Observers watch the queue instead of polling: they replay every
 * change, revision by revision, so a term however short is reported (a poll would miss it).
 */
export class EtcdElection implements Election {
  private readonly election: LockElection;

  constructor(
    readonly name: string,
    lock: Lock,
    private readonly ctx: EtcdContext,
    private readonly dir: string,
  ) {
    this.election = new LockElection(name, lock, () => this.leader());
  }

  campaign(value: string, options?: { waitMs?: number; signal?: AbortSignal }): Promise<Term> {
    return this.election.campaign(value, options);
  }

  async leader(): Promise<Leader | undefined> {
    const range = await this.ctx.store.range(rangeByCreation(this.dir, 'Ascend', 1, { keysOnly: true }));
    const first = range.kvs[0];
    return first === undefined ? undefined : this.leaderOf(keyOf(first), createdAt(first));
  }

  /**
   * Calls `listener` with the leader at once and after every revision that changes it. `intervalMs`
   * is how soon it reads again after etcd could not be reached (a watch resumes on its own).
   */
  observe(listener: (leader: Leader | undefined) => void, options: { intervalMs?: number } = {}): () => void {
    const intervalMs = options.intervalMs ?? 1_000;
    if (!Number.isFinite(intervalMs) || intervalMs < 10) {
      throw new InvalidLockOptionError('intervalMs', 'a number of milliseconds of at least 10', intervalMs);
    }
    let stopped = false;
    let cancel: (() => void) | undefined;
    let timer: NodeJS.Timeout | undefined;
    let last: number | null = null; // the token reported last (0: nobody); null: nothing yet
    const candidates = new Map<string, number>(); // key → create revision
    const report = () => {
      let first: [string, number] | undefined;
      for (const entry of candidates) if (first === undefined || entry[1] < first[1]) first = entry;
      const token = first?.[1] ?? 0;
      if (token === last) return;
      last = token;
      listener(first && this.leaderOf(first[0], first[1]));
    };
    const apply = (events: IEvent[]) => {
      // A transaction's events share a revision: report once it is applied whole.
      for (let i = 0; i < events.length; i++) {
        const event = events[i]!;
        if (event.type === 'Delete') candidates.delete(keyOf(event.kv));
        else if (!candidates.has(keyOf(event.kv))) candidates.set(keyOf(event.kv), createdAt(event.kv));
        if (events[i + 1]?.kv.mod_revision !== event.kv.mod_revision) report();
      }
    };
    const start = () => {
      this.ctx.store.range(rangeByCreation(this.dir, 'Ascend', 0, { keysOnly: true })).then((range) => {
        if (stopped) return;
        candidates.clear();
        for (const kv of range.kvs) candidates.set(keyOf(kv), createdAt(kv));
        report();
        const from = revisionOf(range.header) + 1;
        cancel = this.ctx.store.subscribe({ key: this.dir, prefix: true, from }, apply, retry);
      }, retry);
    };
    const retry = () => {
      if (!stopped) timer = setTimer(start, intervalMs); // an interval past a Node timer's reach: clamped
    };
    start();
    return () => {
      stopped = true;
      clearTimeout(timer);
      cancel?.();
    };
  }

  private leaderOf(key: string, token: number): Leader | undefined {
    const value = proclaimedValue(ownerOf(this.dir, key));
    return value === undefined ? undefined : { value, fencingToken: token };
  }
}
