import { Busy, type Watch } from '../locks/core/backend.js';

/** Delays between tries to cancel a wait that had not started waiting yet when first asked, ms. */
const CANCEL_RETRIES_MS = [0, 20, 100, 500, 2_000];

/** What a database backend does for its server-side waits (method syntax: a backend's own wait type fits). */
export interface ServerWaitHooks<W> {
  /** The fencing token of the lock the wait was granted (read from the grant, or drawn now). */
  drawToken(wait: W): Promise<number>;
  /** Cancels the server-side wait if it still waits; true if it did, or if nothing is left to cancel. */
  cancel(wait: W): Promise<boolean>;
  /** Gives back a lock the wait obtained after its waiter had left. */
  giveBack(wait: W): Promise<void>;
  /** The wait is over (granted and taken, given back, or failed): the session may be given back. */
  settled(wait: W): void;
  /** A background failure (a cancel or give-back that failed): to the client's events. */
  report(error: unknown): void;
}

/**
 * A waiter queued in a database server's own lock queue: a blocking statement (pg_advisory_lock,
 * GET_LOCK) on the owner's pinned session `S`. It is the watch of the waiter's refusal: `changed`
 * fires when the server grants the lock — the moment the holder releases it or its session ends,
 * without polling — or when the wait ends otherwise (its time slice ran out, it was cancelled, the
 * connection was lost), and the waiter tries again. A granted lock (its token known) waits here until
 * the waiter's next attempt takes it.
 *
 * The core cancels a refusal's watch whenever its waiter wakes (a local release pokes it, too) and
 * then tries again at once: that try adopts the wait still queued (`watch()` again), keeping its
 * place in the server's queue, and only a watch nobody adopts by the next turn of the event loop is
 * cancelled on the server. A waiter that leaves (timeout, abort) cancels at once, and gives back a
 * lock granted too late.
 */
export class ServerWait<S> {
  state: 'pending' | 'cancelling' | 'granted' | 'failed' | 'taken' = 'pending';
  /** The fencing token of the lock, once granted. */
  token = 0;
  /** Settles (never rejects) when the wait is over either way. */
  readonly done: Promise<void>;
  private wanted = true;
  private abandoned = false;

  constructor(
    readonly session: S,
    /** Resolves true when the server granted the lock; false or a rejection: the wait ended without it. */
    granted: Promise<boolean>,
    private readonly hooks: ServerWaitHooks<ServerWait<S>>,
  ) {
    this.done = granted
      .then(async (ok) => {
        if (!ok) throw new Error('not granted');
        if (this.abandoned) return this.giveBack(); // granted as its waiter gave up: straight back
        this.token = await hooks.drawToken(this);
        this.state = 'granted';
        if (this.abandoned) this.giveBack();
      })
      .catch(() => {
        // The waiter tries again and decides (a lost connection ended the session already). A failed
        // wait may have left the lock taken just after its grant: `settled` sees state 'failed'.
        this.state = 'failed';
        hooks.settled(this);
      });
  }

  /** A watch over this wait for the waiter's refusal; the waiter wants it again (adopts it). */
  watch(): Watch {
    this.wanted = true;
    return { changed: this.done, cancel: () => this.unwant() };
  }

  /** The granted lock, for the waiter's attempt: its token. */
  take(): number {
    this.state = 'taken';
    this.hooks.settled(this);
    return this.token;
  }

  /** The waiter left for good: cancel now, give back whatever is granted. */
  abandon(): void {
    this.abandoned = true;
    this.wanted = false;
    if (this.state === 'pending') this.cancel();
    else if (this.state === 'granted') this.giveBack();
  }

  private unwant(): void {
    this.wanted = false;
    setImmediate(() => {
      if (!this.wanted && this.state === 'pending') this.cancel();
    });
  }

  private giveBack(): void {
    this.state = 'taken';
    this.hooks
      .giveBack(this)
      .catch((error: unknown) => this.hooks.report(error))
      .finally(() => this.hooks.settled(this));
  }

  /**
   * Cancels the server-side wait. A cancel can arrive before the statement started waiting (then the
   * server shows nothing to cancel): it is sent again a few times while the wait is pending; the
   * wait's time slice bounds whatever is missed.
   */
  private cancel(): void {
    this.state = 'cancelling';
    void (async () => {
      for (const delay of CANCEL_RETRIES_MS) {
        if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay).unref());
        if (this.state !== 'cancelling') return;
        if (await this.hooks.cancel(this)) return;
      }
    })().catch((error: unknown) => this.hooks.report(error));
  }
}

/**
 * What an attempt makes of the wait its owner's session has queued on the server, before trying the
 * lock itself: the granted lock (`taken`: the wait and its token, when `fits` it — the mode asked for),
 * or a refusal that keeps the wait's place in the server's queue (its watch, when the caller waits),
 * or undefined when no wait is queued. A wait being cancelled is awaited first: the server answers the
 * cancel (or the grant that beat it) shortly.
 */
export async function adoptQueuedWait<W extends ServerWait<unknown>>(
  session: { readonly wait: W | undefined },
  waiting: boolean,
  fits: (wait: W) => boolean = () => true,
): Promise<{ readonly taken: W; readonly token: number } | Busy | undefined> {
  for (let wait = session.wait; wait !== undefined; wait = session.wait) {
    if (wait.state === 'cancelling') {
      await wait.done;
      continue;
    }
    if (wait.state === 'granted' && fits(wait)) return { taken: wait, token: wait.take() };
    return waiting ? new Busy(undefined, wait.watch()) : new Busy(undefined);
  }
  return undefined;
}
