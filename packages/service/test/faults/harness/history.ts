import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * A run's history in the style of Jepsen's: every operation is an `invoke` followed by its
 * completion — `ok` (it happened, we were told so), `fail` (it definitely did not happen) or `info`
 * (we cannot know: a timeout, a reset connection, a 503) — and the harness adds `fault` events. Times
 * are ms on the monotonic clock since the history began. The harness also samples what Redis offers
 * (`offer` events, checked against the 202s told before each sample). Written as JSON Lines as it
 * happens (flushed every 100 ms), so a crashed run still leaves its history behind.
 */
export type Completion = 'ok' | 'fail' | 'info';

export interface BuyInvoke {
  readonly type: 'invoke';
  readonly f: 'buy';
  /** One logical client (a buyer with one Idempotency-Key); its attempts share it. */
  readonly process: string;
  readonly user: string;
  readonly key: string;
  readonly server: string;
  readonly attempt: number;
}

export interface BuyCompletion {
  readonly type: Completion;
  readonly f: 'buy';
  readonly process: string;
  readonly user: string;
  readonly key: string;
  readonly server: string;
  readonly attempt: number;
  /** HTTP status, when an answer came. */
  readonly status?: number;
  /** 202: the order id the client was told. */
  readonly orderId?: string;
  /** The API's error code, or what went wrong on the wire (timeout, reset, refused). */
  readonly error?: string;
}

export interface FaultEvent {
  readonly type: 'fault';
  /** Which fault (a row's name), and what it did to what. */
  readonly fault: string;
  readonly phase: 'start' | 'end';
  readonly target: string;
}

/**
 * A sample of the sale's offer on Redis: the units its stock key holds, read with the recovery flag in
 * one MGET. `t` is when the answer came; `sentAt` when the read was sent (every 202 told before
 * `sentAt` was reserved before Redis read the key).
 */
export interface OfferEvent {
  readonly type: 'offer';
  readonly sentAt: number;
  /** The stock key (null: Redis has no such key, e.g. after losing its data). */
  readonly offered: number | null;
  /** A rebuild's flag was up: the sale sells nothing while it is. */
  readonly recovering: boolean;
}

export type HistoryEvent = (BuyInvoke | BuyCompletion | FaultEvent | OfferEvent) & { readonly t: number };

export class History {
  readonly events: HistoryEvent[] = [];
  private readonly origin = performance.now();
  /** Lines not written yet (a row of tens of thousands of requests would pay a write per event). */
  private unwritten: string[] = [];
  private flusher: NodeJS.Timeout | undefined;

  /** @param file JSON Lines file the events are appended to (none: in memory only). */
  constructor(readonly file?: string) {
    if (file) {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, '');
    }
  }

  /** Writes what is buffered (also every 100 ms while events come). */
  flush(): void {
    clearTimeout(this.flusher);
    this.flusher = undefined;
    if (!this.file || this.unwritten.length === 0) return;
    appendFileSync(this.file, this.unwritten.join(''));
    this.unwritten = [];
  }

  now(): number {
    return Math.round((performance.now() - this.origin) * 1000) / 1000;
  }

  add<E extends BuyInvoke | BuyCompletion | FaultEvent | OfferEvent>(event: E): E & { t: number } {
    const stamped = { ...event, t: this.now() };
    this.events.push(stamped);
    if (this.file) {
      this.unwritten.push(`${JSON.stringify(stamped)}\n`);
      this.flusher ??= setTimeout(() => this.flush(), 100);
    }
    return stamped;
  }

  fault(fault: string, phase: 'start' | 'end', target: string): void {
    this.add({ type: 'fault', fault, phase, target });
    this.flush();
  }
}
