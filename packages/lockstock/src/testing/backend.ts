import type { BackendCapabilities } from '../locks/core/spi.js';
import type { Lock, LockClient } from '../locks/types.js';

/**
 * Options the suite asks a client for: `watchdogTimeoutMs` is the client's watchdog lease (a check of
 * lost holds asks for a short one); `sessionTimeoutMs` is how long a backend whose session carries
 * the holds (`leases: 'session'`) keeps a dead client's holds. A backend ignores what does not apply.
 */
export interface ContractClientOptions {
  watchdogTimeoutMs?: number;
  sessionTimeoutMs?: number;
}

/**
 * The backend under test, as the contract suite needs it — a factory its author writes, nothing of
 * its internals: how to make clients in this process, how fixture processes make theirs, and the
 * administrative way to end every hold of a lock behind its holders' backs.
 */
export interface ContractBackend {
  /** A new client of the backend (the suite closes every client it asks for). */
  client(options?: ContractClientOptions): LockClient | Promise<LockClient>;
  /**
   * Ends every hold of `lock` behind its holders' backs, as an operator would (a force-unlock, a
   * revoked session): the suite checks that holders notice and that a stale release changes nothing.
   */
  breakHolds(client: LockClient, lock: Lock): Promise<void>;
  /**
   * How the suite's fixture processes (other OS processes: contenders, a holder it SIGKILLs) make a
   * client: they import `module` (a file URL, or an absolute path) and call its exported
   * `connect(config)` with what `config(options)` returned here — JSON, as it crosses a command line.
   * Leave it out for a backend whose locks live in one process: its contenders are then clients of
   * the suite's process, and the checks that need a holder in another process are skipped.
   */
  processes?: {
    /** The module exporting `connect(config)`: a file URL (`new URL('./connect.js', import.meta.url)`) or absolute path. */
    readonly module: string | URL;
    /** The JSON a fixture process's `connect` gets, for a client with `options`. */
    config(options?: ContractClientOptions): unknown;
  };
  /**
   * What the backend promises; read from the first client's `backend.capabilities` (every
   * LockClientBase has it) when left out. Checks of dead holders follow `leases`; the subjects of a
   * family in `unsupported` are skipped once its factory is seen to refuse them.
   */
  capabilities?: BackendCapabilities;
}
