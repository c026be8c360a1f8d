import { monotonicNow, validUntil, type Watch } from '../backend/index.js';
import { sessionKey } from './keys.js';
import { op, revisionOf, type EtcdStore } from './store.js';

/** Why a session ended. */
export type SessionEnd =
  /** etcd says its lease is gone: revoked (an operator, `lease revoke`) or expired there. */
  | 'lease_gone'
  /** No keep-alive was answered within the TTL: etcd unreachable, or this process was paused. */
  | 'unreachable'
  /** The lock client was closed (its lease revoked). */
  | 'closed';

const WHY: Record<SessionEnd, string> = {
  lease_gone: 'etcd revoked or expired its lease, and every key on it',
  unreachable: 'no keep-alive was answered within its TTL (etcd unreachable, or this process paused)',
  closed: 'its lock client was closed',
};

/** The cause of every hold lost with an etcd session (LockLostError, reason 'session_lost'). */
export class EtcdSessionEndedError extends Error {
  override readonly name = 'EtcdSessionEndedError';
  readonly code = 'ERR_ETCD_SESSION_ENDED';
  constructor(
    /** The session's lease id (decimal, as etcd prints it). */
    readonly leaseId: string,
    readonly why: SessionEnd,
    options?: ErrorOptions,
  ) {
    super(`etcd session (lease ${BigInt(leaseId).toString(16)}) ended: ${WHY[why]}`, options);
  }
}

/** The open keep-alive stream: `send` one keep-alive (remembering when), `end` it. */
interface KeepAlives {
  send(): void;
  end(): void;
}

/** How soon a broken keep-alive stream is opened again, ms (at most; a third of the TTL if shorter). */
const REOPEN_MS = 250;

/**
 * One etcd lease carrying every key a lock client puts (Go's concurrency.Session): holds have no
 * lease of their own, they last as long as the session. Kept alive on one stream every third of the
 * TTL, as Go's client does. The session is over — every hold it carried is lost at once — when:
 * - etcd answers a keep-alive with TTL 0, or deletes the session's sentinel key (a key on the lease,
 *   watched: a revoke is seen at once, not at the next keep-alive);
 * - no keep-alive was answered in time: the lease is trusted until `sent + TTL − drift` of the last
 *   answered one (the rule of core/lease.ts, on the monotonic clock), so a client cut off from etcd or
 *   paused past the TTL knows its holds are gone before anyone else can take them, or as it resumes.
 */
export class EtcdSession {
  readonly hex: string;
  private until: number;
  private ended: EtcdSessionEndedError | undefined;
  private readonly listeners = new Set<() => void>();
  private beat: NodeJS.Timeout | undefined;
  private lapse: NodeJS.Timeout | undefined;
  private stream: KeepAlives | undefined;
  private sentinel: Watch | undefined;

  private constructor(
    private readonly store: EtcdStore,
    /** The lease id, decimal (as etcd's API takes it). */
    readonly id: string,
    /** The TTL etcd granted (at least its minimum, whatever was asked), ms. */
    readonly ttlMs: number,
    requestedAt: number,
    private readonly report: (error: unknown) => void,
    private readonly whenEnded: (session: EtcdSession, error: EtcdSessionEndedError) => void,
  ) {
    this.hex = BigInt(id).toString(16);
    this.until = validUntil(requestedAt, ttlMs);
  }

  /** Grants the lease, puts and watches the sentinel, starts the keep-alives. */
  static async open(
    store: EtcdStore,
    options: { ttlSeconds: number; keyPrefix: string },
    report: (error: unknown) => void,
    whenEnded: (session: EtcdSession, error: EtcdSessionEndedError) => void,
  ): Promise<EtcdSession> {
    const requestedAt = monotonicNow();
    const grant = await store.grant(options.ttlSeconds);
    const session = new EtcdSession(
      store,
      grant.ID,
      Number(grant.TTL) * 1_000,
      requestedAt,
      report,
      whenEnded,
    );
    try {
      await session.watchSentinel(sessionKey(options.keyPrefix, session.hex));
    } catch (error) {
      await session.close();
      throw error;
    }
    session.keepAlive();
    session.armLapse();
    return session;
  }

  /** True while the lease can be trusted; a session found past its validity ends here and now. */
  get alive(): boolean {
    if (this.ended) return false;
    if (monotonicNow() < this.until) return true;
    this.end('unreachable');
    return false;
  }

  /** Why it ended, once it has. */
  get endedWith(): EtcdSessionEndedError | undefined {
    return this.ended;
  }

  /** Calls `listener` once when the session ends (at once if it has); returns the unsubscribe. */
  onEnd(listener: () => void): () => void {
    if (this.ended) {
      listener();
      return () => undefined;
    }
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** etcd refused a put on the lease (not found): the session is over. */
  leaseGone(cause: unknown): void {
    this.end('lease_gone', cause);
  }

  /** Ends the session without reporting it and revokes its lease: its keys go at once. */
  async close(): Promise<void> {
    this.end('closed', undefined, false);
    await this.store.revoke(this.id).catch(this.report); // unreachable: the lease runs out on its own
  }

  private end(why: SessionEnd, cause?: unknown, notify = true): void {
    if (this.ended) return;
    const error = new EtcdSessionEndedError(this.id, why, cause === undefined ? undefined : { cause });
    this.ended = error;
    clearInterval(this.beat);
    clearTimeout(this.lapse);
    this.stream?.end();
    this.stream = undefined;
    this.sentinel?.cancel();
    for (const listener of [...this.listeners]) listener();
    this.listeners.clear();
    if (notify) this.whenEnded(this, error);
    // A session given up on while etcd still keeps its lease would keep blocking others until the TTL
    // runs out there: revoke it (when etcd is reachable again this frees its keys at once).
    if (why === 'unreachable') this.store.revoke(this.id).catch(this.report);
  }

  private async watchSentinel(key: string): Promise<void> {
    const put = await this.store.txn([], [op.put(key, '', this.id)]);
    this.watchFrom(key, revisionOf(put.header) + 1);
  }

  /** etcd deletes the sentinel with every other key of the lease: that deletion ends the session. */
  private watchFrom(key: string, from: number): void {
    let deleted = false;
    const watch = this.store.watch({ key, from, deletesOnly: true }, () => (deleted = true));
    this.sentinel = watch;
    void watch.changed.then(async () => {
      watch.cancel();
      if (this.ended) return;
      if (deleted) return this.end('lease_gone');
      // etcd dropped the watch (a compaction): look at the key and watch again from there.
      try {
        const now = await this.store.range({ key: Buffer.from(key) });
        if (this.ended) return;
        if (now.kvs.length === 0) this.end('lease_gone');
        else this.watchFrom(key, revisionOf(now.header) + 1);
      } catch (error) {
        this.report(error); // keep-alives still decide
      }
    });
  }

  private keepAlive(): void {
    this.beat = setInterval(() => this.stream?.send(), Math.max(100, this.ttlMs / 3));
    this.openStream();
  }

  private openStream(): void {
    this.store.keepAliveStream().then(
      (stream) => {
        if (this.ended) return stream.end();
        // Answers come in the order of the requests: each confirms the lease from when it was sent.
        const sent: number[] = [];
        const alives: KeepAlives = {
          send: () => {
            sent.push(monotonicNow());
            stream.write({ ID: this.id });
          },
          end: () => stream.end(),
        };
        stream.on('data', (answer) => {
          const sentAt = sent.shift();
          if (Number(answer.TTL) <= 0) this.end('lease_gone');
          else if (sentAt !== undefined) this.confirm(sentAt, Number(answer.TTL) * 1_000);
        });
        const broken = (error?: unknown) => {
          if (this.stream !== alives) return;
          this.stream = undefined;
          if (error !== undefined) this.report(error);
          this.reopen();
        };
        stream.on('error', broken);
        stream.on('end', () => broken());
        this.stream = alives;
        alives.send();
      },
      (error: unknown) => {
        this.report(error);
        this.reopen();
      },
    );
  }

  private reopen(): void {
    if (this.ended) return;
    setTimeout(() => this.openStream(), Math.min(REOPEN_MS, this.ttlMs / 3)).unref();
  }

  private confirm(sentAt: number, ttlMs: number): void {
    const until = validUntil(sentAt, ttlMs);
    if (until <= this.until) return;
    this.until = until;
    this.armLapse();
  }

  private armLapse(): void {
    clearTimeout(this.lapse);
    // A timer may fire a fraction of a millisecond before the monotonic deadline: look again then.
    this.lapse = setTimeout(() => this.alive && this.armLapse(), Math.max(1, this.until - monotonicNow()));
    this.lapse.unref();
  }
}
