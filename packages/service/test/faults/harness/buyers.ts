import { setTimeout as delay } from 'node:timers/promises';
import type { BuyCompletion, History } from './history.js';

export interface LoadOptions {
  /** Base URLs of the `serve` processes; a buyer starts on one and retries on the next. */
  servers: readonly string[];
  saleId: string;
  /** A bearer token for a user. */
  tokenFor: (user: string) => string;
  /** New buyers per second. */
  ratePerSecond: number;
  /** Every n-th buyer comes back for a second unit with a new Idempotency-Key (0: nobody). @default 5 */
  secondIntentEvery?: number;
  /** The client gives up on a request after this, ms. @default 2000 */
  requestTimeoutMs?: number;
  /** A buyer retries an unknown outcome for this long, ms. @default 15000 */
  buyerDeadlineMs?: number;
  /** User id prefix (one per row, so rows never share users). */
  userPrefix: string;
  history: History;
}

type Outcome = Omit<BuyCompletion, 'f' | 'process' | 'user' | 'key' | 'server' | 'attempt'>;

/**
 * Buyers who do what the README tells a client to do: every purchase carries an Idempotency-Key,
 * and an unknown outcome (a timeout, a reset connection, a 503) is retried with the same key —
 * on another server, after Retry-After — until a definite answer or the buyer's deadline. A
 * definite answer is a 202 (bought) or a 4xx (not bought); a refused connection (nothing was sent)
 * is a definite failure of that attempt, and retried too.
 *
 * Buyers arrive at a steady rate until stopIssuing(), so faults land in the middle of the load.
 */
export class Load {
  private issuedCount = 0;
  private stopped = false;
  private readonly running = new Set<Promise<void>>();
  private loop: Promise<void> | undefined;

  constructor(private readonly options: LoadOptions) {}

  get issued(): number {
    return this.issuedCount;
  }

  start(): void {
    this.loop ??= this.issue();
  }

  stopIssuing(): void {
    this.stopped = true;
  }

  /** Resolves when issuing has stopped and every buyer has its definite answer or gave up. */
  async finished(): Promise<void> {
    await this.loop;
    while (this.running.size > 0) await Promise.all([...this.running]);
  }

  private async issue(): Promise<void> {
    const interval = 1000 / this.options.ratePerSecond;
    const began = performance.now();
    while (!this.stopped) {
      const i = this.issuedCount++;
      const buyer = this.buyer(i).finally(() => this.running.delete(buyer));
      this.running.add(buyer);
      const next = began + (i + 1) * interval; // a steady rate, whatever each buyer takes
      await delay(Math.max(0, next - performance.now()));
    }
  }

  private async buyer(i: number): Promise<void> {
    const user = `${this.options.userPrefix}${i}`;
    await this.intent(user, `${user}-a`, i);
    const every = this.options.secondIntentEvery ?? 5;
    if (every > 0 && i % every === 0) await this.intent(user, `${user}-b`, i + 1);
  }

  /** One purchase intent: one Idempotency-Key, retried until a definite answer or the deadline. */
  private async intent(user: string, key: string, firstServer: number): Promise<void> {
    const { servers, history } = this.options;
    const deadline = performance.now() + (this.options.buyerDeadlineMs ?? 15_000);
    for (let attempt = 1; ; attempt++) {
      const server = servers[(firstServer + attempt - 1) % servers.length] as string;
      const base = { f: 'buy' as const, process: key, user, key, server, attempt };
      history.add({ type: 'invoke', ...base });
      const outcome = await this.post(server, user, key);
      history.add({ ...base, ...outcome });
      const definite = outcome.type === 'ok' || (outcome.status !== undefined && outcome.status < 500);
      if (definite || performance.now() >= deadline) return;
      await delay(outcome.status === 503 ? 1000 : 100); // Retry-After: 1 on a 503
    }
  }

  private async post(server: string, user: string, key: string): Promise<Outcome> {
    try {
      const response = await fetch(`${server}/api/sales/${this.options.saleId}/orders`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${this.options.tokenFor(user)}`,
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        body: '{}',
        signal: AbortSignal.timeout(this.options.requestTimeoutMs ?? 2000),
      });
      const body = (await response.json()) as { orderId?: string; error?: string };
      if (response.status === 202) return { type: 'ok', status: 202, orderId: String(body.orderId) };
      const type = response.status >= 500 ? 'info' : 'fail';
      return { type, status: response.status, error: String(body.error) };
    } catch (error) {
      const { name, cause } = error as Error & { cause?: { code?: string } };
      if (name === 'TimeoutError') return { type: 'info', error: 'timeout' };
      // Refused: the request never left, so it certainly did not happen.
      if (cause?.code === 'ECONNREFUSED') return { type: 'fail', error: 'refused' };
      return { type: 'info', error: cause?.code ?? (error as Error).message };
    }
  }
}
