import type {
  Etcd3,
  ICompare,
  IDuplexStream,
  IEvent,
  IKeyValue,
  ILeaseGrantResponse,
  ILeaseKeepAliveRequest,
  ILeaseKeepAliveResponse,
  IRangeRequest,
  IRangeResponse,
  IRequestOp,
  IResponseHeader,
  ITxnResponse,
  IWatchResponse,
} from 'etcd3';
import { BackendUnreachableError, type Watch } from '../backend/index.js';
import { etcd3 } from './driver.js';
import { prefixEnd } from './keys.js';

const bytes = (text: string): Buffer => Buffer.from(text);

/** The revision a response was served at, as a number (revisions stay far below 2^53). */
export const revisionOf = (header: IResponseHeader): number => Number(header.revision);

/** A key's create revision: its fencing token once it holds. */
export const createdAt = (kv: IKeyValue): number => Number(kv.create_revision);

export const keyOf = (kv: IKeyValue): string => kv.key.toString();

/** The operations of a transaction, as etcd's protobuf requests. */
export const op = {
  put: (key: string, value: string, lease: string | undefined): IRequestOp => ({
    request_put: { key: bytes(key), value: bytes(value), ...(lease === undefined ? {} : { lease }) },
  }),
  /** A new value on the lease the key has (a read-write key changing mode). */
  rewrite: (key: string, value: string): IRequestOp => ({
    request_put: { key: bytes(key), value: bytes(value), ignore_lease: true },
  }),
  get: (key: string): IRequestOp => ({ request_range: { key: bytes(key) } }),
  delete: (key: string): IRequestOp => ({ request_delete_range: { key: bytes(key) } }),
  /** The keys of `dir` in creation order (or newest first), at most `limit` (0: all). */
  byCreation: (
    dir: string,
    order: 'Ascend' | 'Descend',
    limit = 0,
    options: { keysOnly?: boolean; createdBefore?: number } = {},
  ): IRequestOp => ({ request_range: rangeByCreation(dir, order, limit, options) }),
  /** How many keys `dir` has (etcd counts before any revision filter: no filter here). */
  count: (dir: string): IRequestOp => ({
    request_range: { key: bytes(dir), range_end: prefixEnd(dir), count_only: true },
  }),
};

export function rangeByCreation(
  dir: string,
  order: 'Ascend' | 'Descend',
  limit = 0,
  { keysOnly = false, createdBefore }: { keysOnly?: boolean; createdBefore?: number } = {},
): IRangeRequest {
  return {
    key: bytes(dir),
    range_end: prefixEnd(dir),
    sort_target: 'Create',
    sort_order: order,
    limit,
    keys_only: keysOnly,
    ...(createdBefore === undefined ? {} : { max_create_revision: createdBefore - 1 }),
  };
}

/** The comparisons of a transaction. */
export const cmp = {
  /** `key` was created at `revision` (0: it does not exist). */
  createdAt: (key: string, revision: number): ICompare => ({
    key: bytes(key),
    target: 'Create',
    result: 'Equal',
    create_revision: revision,
  }),
  /** No key exists in `dir` (a range compare holds for every key of the range: none has a revision). */
  emptyDir: (dir: string): ICompare => ({
    key: bytes(dir),
    range_end: prefixEnd(dir),
    target: 'Create',
    result: 'Equal',
    create_revision: 0,
  }),
  modifiedAt: (key: string, revision: number): ICompare => ({
    key: bytes(key),
    target: 'Mod',
    result: 'Equal',
    mod_revision: revision,
  }),
};

/** The range a transaction's `index`-th operation read. */
export function rangeAt(reply: ITxnResponse, index: number): IRangeResponse {
  const range = reply.responses[index]?.response_range;
  if (range === undefined) throw new Error(`etcd transaction: no range response at ${index}`);
  return range;
}

/** What a watch is about: one key or every key of a prefix, from a revision on. */
export interface WatchSpec {
  readonly key: string;
  readonly prefix?: boolean;
  /** The first revision whose events it sees (a read's revision + 1: nothing in between is missed). */
  readonly from: number;
  readonly deletesOnly?: boolean;
  /** Deletions carry the deleted key (its create revision: what a semaphore waiter counts). */
  readonly previous?: boolean;
}

/**
 * The etcd calls of one lock client, each with a deadline: gRPC waits for a connection forever by
 * default, and an acquire must fail (LockBackendError) rather than hang while etcd is unreachable.
 * Streams (watches, keep-alives) have no deadline: they live as long as their session.
 */
export class EtcdStore {
  /** The cancel of every live watch: close() ends them (a watch left on a closed etcd3 client retries forever). */
  private readonly watches = new Set<() => void>();

  /** The last "no connection" answer (UNAVAILABLE): what explains the circuit breaker's refusals. */
  private lastUnavailable: { code: string | undefined; detail: string; error: Error } | undefined;

  constructor(
    readonly etcd: Etcd3,
    private readonly requestTimeoutMs: number,
    private readonly report: (error: unknown) => void,
    /** The endpoints, for errors (never credentials). */
    private readonly address = "the etcd client's hosts",
  ) {}

  private get deadline(): { deadline: number } {
    return { deadline: Date.now() + this.requestTimeoutMs };
  }

  /**
   * A call that failed for want of a connection names etcd's address and why: gRPC's UNAVAILABLE
   * ("No connection established. Last error: connect ECONNREFUSED …", "Name resolution failed"), or
   * etcd3's circuit breaker refusing calls after such failures (its message names nothing) — as a
   * BackendUnreachableError (lock calls: LockConnectionError). Any other error is rethrown as it is.
   */
  private readonly explain = (error: unknown): never => {
    if (error instanceof etcd3().GRPCUnavailableError) {
      const message = error.message;
      const code = /Name resolution failed/i.test(message)
        ? 'ENOTFOUND'
        : /\b(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ECONNRESET)\b/.exec(
            message,
          )?.[1];
      this.lastUnavailable = { code, detail: code === undefined ? message : '', error };
      throw new BackendUnreachableError('etcd', this.address, code, this.lastUnavailable.detail, {
        cause: error,
      });
    }
    if ((error as { isBrokenCircuitError?: unknown } | null)?.isBrokenCircuitError === true) {
      const last = this.lastUnavailable;
      const detail = `etcd3's circuit breaker refuses calls after failed ones${last?.detail ? `; the last: ${last.detail}` : ''}`;
      throw new BackendUnreachableError('etcd', this.address, last?.code, detail, { cause: error });
    }
    throw error;
  };

  txn(compare: ICompare[], success: IRequestOp[], failure: IRequestOp[] = []): Promise<ITxnResponse> {
    return this.etcd.kv.txn({ compare, success, failure }, this.deadline).catch(this.explain);
  }

  range(request: IRangeRequest): Promise<IRangeResponse> {
    return this.etcd.kv.range(request, this.deadline).catch(this.explain);
  }

  /** Deletes every key starting with `prefix`; how many there were. */
  async deletePrefix(prefix: string): Promise<number> {
    const reply = await this.etcd.kv
      .deleteRange({ key: bytes(prefix), range_end: prefixEnd(prefix) }, this.deadline)
      .catch(this.explain);
    return Number(reply.deleted);
  }

  grant(ttlSeconds: number): Promise<ILeaseGrantResponse> {
    return this.etcd.leaseClient.leaseGrant({ TTL: ttlSeconds }, this.deadline).catch(this.explain);
  }

  async revoke(leaseId: string): Promise<void> {
    await this.etcd.leaseClient.leaseRevoke({ ID: leaseId }, this.deadline).catch(this.explain);
  }

  /** The longest time to live left among `leaseIds`, ms (etcd counts it in whole seconds). */
  async remainingMs(leaseIds: readonly string[]): Promise<number | undefined> {
    const distinct = [...new Set(leaseIds.filter((id) => id !== '0'))];
    const ttls = await Promise.all(
      distinct.map((ID) => this.etcd.leaseClient.leaseTimeToLive({ ID }, this.deadline).catch(this.explain)),
    );
    const seconds = Math.max(-1, ...ttls.map((ttl) => Number(ttl.TTL)));
    return seconds < 0 ? undefined : seconds * 1_000;
  }

  keepAliveStream(): Promise<IDuplexStream<ILeaseKeepAliveRequest, ILeaseKeepAliveResponse>> {
    return this.etcd.leaseClient.leaseKeepAlive();
  }

  /**
   * A one-shot watch: `changed` resolves on the first event `fires` accepts, or when etcd cancels the
   * watch (compacted past `from`: the waiter looks again). The etcd3 client resumes a watch after a
   * reconnection from the last revision it saw, so no event is missed while etcd is away.
   */
  watch(spec: WatchSpec, fires: (event: IEvent) => boolean): Watch {
    let fire!: () => void;
    const changed = new Promise<void>((resolve) => (fire = resolve));
    const cancel = this.subscribe(
      spec,
      (events) => {
        if (events.some(fires)) fire();
      },
      fire,
    );
    return { changed, cancel };
  }

  /**
   * Every event of `spec`, in revision order, until the returned cancel; `dropped` if etcd cancels
   * the watch (compacted past `from`).
   */
  subscribe(spec: WatchSpec, onEvents: (events: IEvent[]) => void, dropped: () => void): () => void {
    let builder = this.etcd.watch();
    builder = spec.prefix ? builder.prefix(spec.key) : builder.key(spec.key);
    builder = builder.startRevision(String(spec.from));
    if (spec.deletesOnly) builder = builder.only('delete');
    if (spec.previous) builder = builder.withPreviousKV();
    // Not create(): that waits for etcd to confirm the watch, and the revision it starts from already
    // guarantees every event after the read that set it.
    const watcher = builder.watcher();
    let detached = false;
    const cancel = () => {
      this.watches.delete(cancel);
      if (detached) return;
      detached = true;
      try {
        watcher.cancel().catch(this.report);
      } catch (error) {
        this.report(error); // the watch stream is being torn down
      }
    };
    watcher.on('data', (response: IWatchResponse) => {
      if (!detached && response.events.length > 0) onEvents(response.events);
    });
    watcher.on('error', () => {
      detached = true; // etcd dropped it: nothing left to cancel
      this.watches.delete(cancel);
      dropped();
    });
    this.watches.add(cancel);
    return cancel;
  }

  /** Cancels every watch still open (the client closes). */
  cancelWatches(): void {
    for (const cancel of [...this.watches]) cancel();
  }
}
