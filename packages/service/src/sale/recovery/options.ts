import type { AdmissionRestore } from '../admission/restore.js';
import type { SaleContext } from '../context/context.js';
import type { Logger } from '../logger.js';
import type { Database } from '../store/db.js';
import type { PipelineFenceOptions } from './fence.js';
import type { RebuildCause } from './inspect.js';
import type { RebuildReport } from './rebuild.js';

/**
 * What a RecoveryMonitor is built with (monitor.ts), in a file of its own because SplitSaleRecovery
 * shares them too: declared in monitor.ts, they made monitor.ts and split-sale-recovery.ts import
 * each other.
 */
export interface RecoveryMonitorOptions {
  context: SaleContext;
  db: Database;
  /** Puts a rebuilt sale's admission state (its waiting room, a raffle's cursor) back before its stock. */
  admission: AdmissionRestore;
  logger?: Logger;
  /**
   * How often every open sale is compared with the record, ms; 0: only when the connection comes
   * back (and at start). Sales being rebuilt elsewhere are looked at every `blockedCheckMs`.
   * @default 1000
   */
  checkEveryMs?: number;
  /** @default 100 */
  blockedCheckMs?: number;
  /** Lease of the rebuild lock, ms (renewed by the watchdog; a dead rebuilder holds it this long). @default 5000 */
  lockLeaseMs?: number;
  /** How a rebuild waits for the order pipelines to record what they hold (fence.ts). */
  pipelineFence?: PipelineFenceOptions;
  /** How long an offer a rebuild makes to a waitlisted buyer holds its unit, ms (waitlist/). */
  offerMs?: number;
  /**
   * Work that must succeed before anything is admitted after the connection (re)opened — e.g. the
   * order-id lease is confirmed (Redis may have forgotten it) — run before the sales are checked.
   */
  beforeAdmitting?: () => Promise<void>;
  /** Told about every rebuild this process did: why (missing, behind, recovering: a dead rebuilder's flag). */
  onRebuilt?: (saleId: string, why: RebuildCause, report: RebuildReport, ms: number) => void;
}
