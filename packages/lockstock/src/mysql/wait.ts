import type { Watch } from '../backend/index.js';
import type { PinnedSession } from './session.js';

/** Delays between tries to cancel a wait that had not started waiting yet when first asked, ms. */
const CANCEL_RETRIES_MS = [0, 20, 100, 500, 2_000];

export interface WaitHooks {
  /** Cancels the server-side wait of connection `id` if it still waits; true if it did. */
  cancel(connectionId: number): Promise<boolean>;
  /** Draws the fencing token of the lock the wait was granted (draw-token.sql). */
  drawToken(session: PinnedSession): Promise<number>;
  /** Gives back a lock the wait obtained after its waiter had left. */
  giveBack(wait: BlockingWait): Promise<void>;
  /** The wait is over (granted and taken, or failed): the session may be given back. */
  settled(wait: BlockingWait): void;
  report(error: unknown): void;
}

/**
 * A waiter queued in the server's own queue for a user lock: a blocking GET_LOCK(name, slice) on the
 * owner's pinned session (wait-lock.sql). It is the watch of the waiter's refusal: `changed` fires
 * when the server grants the lock — the moment the holder releases it or its connection ends, without
 * polling — or when the wait ends otherwise (the slice ran out, cancelled, connection lost), and the
 * waiter tries again. A granted lock (its token drawn) waits here until the waiter's next attempt
 * takes it.
 *
 * The core cancels a refusal's watch whenever its waiter wakes and then tries again at once: that try
 * adopts the wait still queued, keeping its place in the server's queue, and only a watch nobody
 * adopts by the next turn of the event loop is cancelled on the server (KILL QUERY from another
 * connection). A waiter that leaves (timeout, abort) cancels at once, and gives back a lock granted
 * too late.
 */
export class BlockingWait {
  state: 'pending' | 'cancelling' | 'granted' | 'failed' | 'taken' = 'pending';
  /** The fencing token drawn once the server granted the lock. */
  token = 0;
  /** Settles (never rejects) when the wait is over either way. */
  readonly done: Promise<void>;
  private wanted = true;
  private abandoned = false;

  constructor(
    readonly session: PinnedSession,
    /** The server-side name waited for (a lock, or one permit of a semaphore). */
    readonly serverName: string,
    granted: Promise<boolean>,
    private readonly hooks: WaitHooks,
  ) {
    this.done = granted
      .then(async (ok) => {
        if (!ok) throw new Error('not granted'); // the slice ran out, or the wait was killed
        if (this.abandoned) {
          // Granted as its waiter gave up: straight back, without drawing a token.
          this.giveBack();
          return;
        }
        try {
          this.token = await hooks.drawToken(session);
        } catch (error) {
          session.unclean = true; // the lock is held without a token: dropped before pooling
          throw error;
        }
        this.state = 'granted';
        if (this.abandoned) this.giveBack();
      })
      .catch(() => {
        // The waiter tries again and decides (a lost connection ended the session already).
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
   * Cancels the server-side wait. A cancel can arrive before the statement reached the server (then
   * the process list does not show it): it is sent again a few times while the wait is pending; the
   * wait's slice bounds whatever is missed.
   */
  private cancel(): void {
    this.state = 'cancelling';
    const id = this.session.connectionId;
    void (async () => {
      for (const delay of CANCEL_RETRIES_MS) {
        if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay).unref());
        if (this.state !== 'cancelling') return;
        if (await this.hooks.cancel(id)) return;
      }
    })().catch((error: unknown) => this.hooks.report(error));
  }
}
