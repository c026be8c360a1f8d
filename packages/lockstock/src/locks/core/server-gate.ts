import type { EventEmitter } from 'node:events';
import { backendError } from '../errors.js';
import {
  dangers,
  UnsafeServerError,
  type ServerChecksMode,
  type ServerFinding,
  type ServerReport,
} from '../server-checks.js';
import type { LockClientEvents } from '../types.js';

/** A strict client that was refused asks the server again after this long (the operator may fix it). */
const RECHECK_UNSAFE_MS = 30_000;
/** A check that failed (the server unreachable) is tried again no sooner than this. */
const RETRY_FAILED_MS = 5_000;

/**
 * The connect-time check of a client's server (LockClientOptions.serverChecks), run at its first
 * acquire rather than at construction: a client made and never used asks nothing, and the connection
 * is up by then. Every acquire calls `enter`, which costs a property read once the check is settled:
 * in 'warn' mode it returns undefined from then on; in 'strict' mode it returns a promise only while a
 * check runs or a danger stands.
 */
export class ServerGate {
  private running: Promise<readonly ServerFinding[]> | undefined;
  /** Settled: nothing left to do on acquires (warn: the check started; strict: it passed). */
  private settled: boolean;
  private refusal: { findings: ServerFinding[]; at: number } | undefined;
  private failedAt = -Infinity;

  constructor(
    private readonly mode: ServerChecksMode,
    private readonly check: (() => Promise<ServerReport>) | undefined,
    private readonly events: EventEmitter<LockClientEvents>,
  ) {
    this.settled = mode === 'off' || check === undefined;
  }

  /** Undefined when the acquire may go on at once; else what it must await first (strict mode). */
  enter(lockName: string): Promise<void> | undefined {
    if (this.settled) return undefined;
    if (this.mode === 'warn') {
      if (this.running === undefined && performance.now() - this.failedAt >= RETRY_FAILED_MS) {
        this.settled = true;
        this.run().catch(() => (this.settled = false)); // tried again by a later acquire
      }
      return undefined;
    }
    return this.strictEnter(lockName);
  }

  private async strictEnter(lockName: string): Promise<void> {
    const refusal = this.refusal;
    if (refusal && performance.now() - refusal.at < RECHECK_UNSAFE_MS) {
      throw new UnsafeServerError(lockName, refusal.findings);
    }
    let findings: readonly ServerFinding[];
    try {
      findings = await this.run();
    } catch (error) {
      throw backendError(lockName, error);
    }
    const unsafe = dangers(findings);
    if (unsafe.length === 0) {
      this.refusal = undefined;
      this.settled = true;
      return;
    }
    this.refusal = { findings: unsafe, at: performance.now() };
    throw new UnsafeServerError(lockName, unsafe);
  }

  /** One check at a time; its findings worth a warning go to `serverWarning` as they come in. */
  private run(): Promise<readonly ServerFinding[]> {
    this.running ??= (async () => {
      try {
        const report = await this.check!();
        for (const finding of report.findings) this.warn(report.backend, finding);
        return report.findings;
      } catch (error) {
        this.failedAt = performance.now();
        throw error;
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  private warn(backend: string, finding: ServerFinding): void {
    if (finding.severity === 'info') return;
    if (this.events.listenerCount('serverWarning') > 0) {
      this.events.emit('serverWarning', { backend, ...finding });
    } else if (finding.severity === 'danger') {
      // A danger nobody listens for must not pass unseen (a warning would repeat on every dev Redis).
      process.emitWarning(finding.message + (finding.fix ? ` ${finding.fix}` : ''), {
        type: 'LockstockServerWarning',
        code: `LOCKSTOCK_${finding.check.toUpperCase().replaceAll('-', '_')}`,
      });
    }
  }
}
