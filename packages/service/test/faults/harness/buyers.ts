import { Agent, request } from 'node:http';
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
  /** Open connections per server at most (more requests wait for one, within their timeout). @default 64 */
  connectionsPerServer?: number;
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
  /** Keep-alive connections, bounded: thousands of buyers retrying at once must not open thousands. */
  private readonly agent: Agent;

  constructor(private readonly options: LoadOptions) {
    this.agent = new Agent({ keepAlive: true, maxSockets: options.connectionsPerServer ?? 64 });
  }

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
    this.agent.destroy();
  }

  /** A steady rate, whatever each buyer takes: every few ms, the buyers due by then. */
  private async issue(): Promise<void> {
    const interval = 1000 / this.options.ratePerSecond;
    const began = performance.now();
    while (!this.stopped) {
      const due = Math.floor((performance.now() - began) / interval) + 1;
      while (this.issuedCount < due && !this.stopped) {
        const buyer = this.buyer(this.issuedCount++).finally(() => this.running.delete(buyer));
        this.running.add(buyer);
      }
      await delay(Math.max(1, Math.min(10, began + due * interval - performance.now())));
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

  private post(server: string, user: string, key: string): Promise<Outcome> {
    const timeoutMs = this.options.requestTimeoutMs ?? 2000;
    const body = '{}';
    return new Promise<Outcome>((resolve) => {
      let settled = false;
      const settle = (outcome: Outcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(outcome);
      };
      const req = request(
        `${server}/api/sales/${this.options.saleId}/orders`,
        {
          method: 'POST',
          agent: this.agent,
          headers: {
            authorization: `Bearer ${this.options.tokenFor(user)}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'idempotency-key': key,
          },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('error', (error: NodeJS.ErrnoException) =>
            settle({ type: 'info', error: error.code ?? error.message }),
          );
          response.on('end', () => {
            const status = response.statusCode ?? 0;
            let parsed: { orderId?: string; error?: string } = {};
            try {
              parsed = JSON.parse(Buffer.concat(chunks).toString()) as typeof parsed;
            } catch {
              // not JSON: the status says enough
            }
            if (status === 202) settle({ type: 'ok', status, orderId: String(parsed.orderId) });
            else settle({ type: status >= 500 ? 'info' : 'fail', status, error: String(parsed.error) });
          });
        },
      );
      // The client gives up after the timeout, waiting for a connection included.
      const timer = setTimeout(() => {
        settle({ type: 'info', error: 'timeout' });
        req.destroy();
      }, timeoutMs);
      req.on('error', (error: NodeJS.ErrnoException) => {
        // Refused: the request never left, so it certainly did not happen.
        if (error.code === 'ECONNREFUSED') settle({ type: 'fail', error: 'refused' });
        else settle({ type: 'info', error: error.code ?? error.message });
      });
      req.end(body);
    });
  }
}
