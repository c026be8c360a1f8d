import type { Logger } from '../logger.js';
import type { Database } from '../store/db.js';
import { queries } from '../store/queries.js';

/** Renewals are at least this frequent: a renewal is also how the pipeline sees a rebuild's fence. */
const MAX_RENEW_EVERY_MS = 1_000;

/**
 * An order pipeline's lease in the record, through which a rebuild fences it
 * (store/migrations/005_pipeline_leases.sql, recovery/fence.ts).
 *
 * A rebuild raises the recovery fence and waits until every pipeline whose lease is live has
 * *drained* it: a step that began after the pipeline had seen the fence has ended, so nothing the
 * pipeline read from Redis before the rebuild began is still in its memory unrecorded. The renewal
 * reads the fence; the pipeline notes it at the start of each step (`beginStep`) and reports it after
 * the step (`drained`). A pipeline that stops making progress stops renewing (a stuck step must not
 * hold a rebuild up for longer than the lease), and one that registers holds nothing yet, so it has
 * drained whatever fence it sees then.
 */
export class PipelineLease {
  private observedFence = 0;
  private drainedFence = 0;
  /** False until registered, and again when the row may be gone or stale: the next step registers. */
  private registered = false;
  private everRegistered = false;
  private lastProgressAt = Date.now();
  private timer: NodeJS.Timeout | undefined;
  private renewal: Promise<void> | undefined;

  constructor(
    private readonly db: Database,
    readonly consumer: string,
    readonly leaseMs: number,
    private readonly logger: Logger,
  ) {}

  /** Renews the lease in the background while the pipeline makes progress. */
  start(): void {
    if (this.timer) return;
    const every = Math.max(10, Math.min(MAX_RENEW_EVERY_MS, Math.floor(this.leaseMs / 3)));
    this.timer = setInterval(() => {
      this.renewal ??= this.renew().finally(() => (this.renewal = undefined));
    }, every);
    this.timer.unref();
  }

  /** After the pipeline stopped (it holds nothing): rebuilds no longer ask about it. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.renewal;
    if (this.everRegistered) await this.release();
  }

  /**
   * The pipeline holds nothing, and reads nothing until its next step (one not running, stepped by
   * `drain` or a test): no rebuild needs to wait for it meanwhile. The next step registers again.
   */
  async release(): Promise<void> {
    this.registered = false;
    await this.db
      .query(queries.leaseRelease, [this.consumer])
      .catch((error: unknown) =>
        this.logger.warn({ err: error, consumer: this.consumer }, 'could not release the pipeline lease'),
      );
  }

  /** The pipeline is alive and moving (a step began, a read returned, a batch was recorded). */
  progress(): void {
    this.lastProgressAt = Date.now();
  }

  /**
   * Before a step reads anything: registers when needed, and returns the fence the step begins at
   * (its batches are refused if a rebuild fences this pipeline out above it).
   */
  async beginStep(): Promise<number> {
    this.progress();
    if (!this.registered) await this.register();
    return this.observedFence;
  }

  /** A step that began at `fence` ended, recorded or not: nothing it read is held any more. */
  async drained(fence: number): Promise<void> {
    if (fence <= this.drainedFence || !this.registered) return;
    try {
      await this.db.query(queries.leaseDrained, [this.consumer, fence]);
      this.drainedFence = fence;
    } catch (error) {
      // The rebuild waits for the next report (or for the lease to lapse).
      this.logger.warn({ err: error, consumer: this.consumer }, 'could not report the drained fence');
    }
  }

  /**
   * Registers again before the next step: after a failed step (the fence may have moved while Redis
   * was away, and a registration sees it at once instead of at the next renewal), and after a batch
   * was fenced out (the row was deleted or marked).
   */
  registerAgain(): void {
    this.registered = false;
  }

  private async register(): Promise<void> {
    const { rows } = await this.db.query<{ fence: string }>(queries.leaseRegister, [
      this.consumer,
      this.leaseMs,
    ]);
    const fence = Number(rows[0]?.fence ?? 0);
    this.observedFence = Math.max(this.observedFence, fence);
    this.drainedFence = Math.max(this.drainedFence, fence);
    this.registered = true;
    this.everRegistered = true;
  }

  private async renew(): Promise<void> {
    if (!this.registered) return; // the next step registers
    if (Date.now() - this.lastProgressAt >= this.leaseMs) return; // stuck: let the lease lapse
    try {
      const { rows } = await this.db.query<{ fence: string }>(queries.leaseRenew, [
        this.consumer,
        this.leaseMs,
      ]);
      const row = rows[0];
      if (!row) {
        this.registered = false; // a rebuild fenced this pipeline out: its row is gone
        return;
      }
      this.observedFence = Math.max(this.observedFence, Number(row.fence));
    } catch (error) {
      this.logger.warn({ err: error, consumer: this.consumer }, 'could not renew the pipeline lease');
    }
  }
}
