/**
 * What a lock client learns about the server its locks depend on (`lockstock doctor`, and the checks
 * every client makes at its first acquire): settings that break a promise silently — an eviction
 * policy that may drop a lock key, a counter that restarts at zero, a pooler that moves sessions, a
 * session timeout the server clamped — each a finding with the check's name, how bad it is, one
 * sentence saying what it breaks and what to change.
 */
import { LockError } from './errors.js';

/**
 * - `danger`: a lock may be granted twice or a fencing token may go backwards (the strict mode refuses);
 * - `warning`: a guarantee is weaker than it looks (after a restart, a failover, a long pause);
 * - `info`: what the server is, for the report (its kind and version).
 */
export type ServerFindingSeverity = 'danger' | 'warning' | 'info';

/** One thing a server check found: which check, how bad, what it breaks, what to change. */
export interface ServerFinding {
  /** A stable name: 'eviction-policy', 'persistence', 'replication', 'server-version', 'pooler'… */
  readonly check: string;
  readonly severity: ServerFindingSeverity;
  /** One sentence: what was found and what it breaks. */
  readonly message: string;
  /** What to change, when something should be. */
  readonly fix?: string;
  /** Which server it concerns, when the client talks to several (a Cluster's masters). */
  readonly server?: string;
}

/** Every finding of one backend's check, `info` ones included. */
export interface ServerReport {
  /** The backend's name (LockBackend.name). */
  readonly backend: string;
  readonly findings: readonly ServerFinding[];
}

/**
 * How a client checks its server at its first acquire:
 * - `'warn'`: in the background; every `danger` or `warning` finding is emitted as a `serverWarning`
 *   event (and a `danger` one as a process warning when nobody listens), the acquire does not wait;
 * - `'strict'`: the first acquire waits for the check, and every acquire is refused with
 *   UnsafeServerError while a `danger` finding stands (a failed check is tried again by the next);
 * - `'off'`: no check.
 */
export type ServerChecksMode = 'warn' | 'strict' | 'off';

/** A strict client's acquire, refused: the server has a setting under which a lock is not safe. */
export class UnsafeServerError extends LockError {
  override readonly name = 'UnsafeServerError';
  readonly code = 'ERR_UNSAFE_SERVER';

  constructor(
    lockName: string,
    readonly findings: readonly ServerFinding[],
  ) {
    super(
      lockName,
      `Lock "${lockName}" was refused: ${findings.map((finding) => finding.message).join(' ')} ` +
        '(serverChecks is "strict"; run `npx lockstock doctor <url>` for the full report)',
    );
  }
}

/** The findings that make a strict client refuse. */
export const dangers = (findings: readonly ServerFinding[]): ServerFinding[] =>
  findings.filter((finding) => finding.severity === 'danger');
