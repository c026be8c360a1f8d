import type { Logger } from '../sale/logger.js';
import { unavailableDependency } from '../sale/unavailable.js';

type Name = 'redis' | 'database' | 'other';

interface Outage {
  readonly since: number;
  readonly cause: string;
  refused: number;
  failures: number;
}

/** The one line that says why: the error's code and message, never its stack. */
function causeOf(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message;
}

/**
 * What the logs say about Redis and the database: one line when one goes down (when, and why — the
 * first error's code and message, no stack), one when it is back (how long it was down, how many
 * requests were refused and how many other failures were seen meanwhile). Nothing in between: a
 * 60 s Redis outage once wrote 10.5 lines/s per serve, most an ioredis stack trace — a warning per
 * refused purchase and one per reconnection attempt (issue 47).
 *
 * Fed by whoever sees a dependency fail or answer: the HTTP error handler (each 503), the Redis
 * client's `error` and `ready` events, the background readings of the sale gauges, and loops that
 * retry on their own (the raffle runner, through `quiet()`).
 */
export class DependencyLog {
  private readonly outages = new Map<Name, Outage>();
  /** When each dependency was last seen answering after an outage, ms. */
  private readonly backAt = new Map<Name, number>();

  constructor(
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * `dependency` failed (`refused`: a request was answered 503 for it). `observedSince`: when the
   * failed attempt began — one begun before the dependency was last seen back is old news, and does
   * not open a new outage (a slow reading that straddled the return).
   */
  down(dependency: Name, error: unknown, refused = false, observedSince?: number): void {
    if (observedSince !== undefined && observedSince < (this.backAt.get(dependency) ?? -Infinity)) return;
    let outage = this.outages.get(dependency);
    if (!outage) {
      outage = { since: this.now(), cause: causeOf(error), refused: 0, failures: 0 };
      this.outages.set(dependency, outage);
      this.logger.warn(
        { dependency, cause: outage.cause, downAt: new Date(outage.since).toISOString() },
        `${dependency} unavailable${dependency === 'redis' ? ': purchases answer 503 until it is back' : ''}`,
      );
    }
    if (refused) outage.refused++;
    else outage.failures++;
  }

  /** `dependency` answered: ends its outage, if there was one. */
  up(dependency: Name): void {
    const outage = this.outages.get(dependency);
    if (!outage) return;
    this.outages.delete(dependency);
    const now = this.now();
    this.backAt.set(dependency, now);
    this.logger.info(
      {
        dependency,
        backAt: new Date(now).toISOString(),
        downForMs: now - outage.since,
        refused: outage.refused,
        failures: outage.failures,
        cause: outage.cause,
      },
      `${dependency} is back`,
    );
  }

  isDown(dependency: Name): boolean {
    return this.outages.has(dependency);
  }

  /**
   * A logger for a loop that retries on its own: its warnings and errors whose `err` is a dependency
   * being unavailable become that dependency's outage (one line), the rest pass through.
   */
  quiet(logger: Logger): Logger {
    const route =
      (level: 'warn' | 'error') =>
      (fields: object, message: string): void => {
        const error = (fields as { err?: unknown }).err;
        const dependency = error === undefined ? undefined : unavailableDependency(error);
        if (dependency) this.down(dependency, error);
        else logger[level](fields, message);
      };
    return {
      info: (fields, message) => logger.info(fields, message),
      warn: route('warn'),
      error: route('error'),
    };
  }
}
