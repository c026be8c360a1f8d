/**
 * What every case of the contract shares: its shape (a name, a time limit, an optional reason to
 * skip, an async run), the clients it made (closed when it ends), unique lock names, the backend's
 * capabilities read once, and the rule that a kind the backend does not offer is skipped only once its
 * factory is seen to refuse it.
 */
import assert from 'node:assert/strict';
import type { LockClientBase } from '../locks/core/client.js';
import type { BackendCapabilities, LockFamily } from '../locks/core/spi.js';
import { UnsupportedLockKindError } from '../locks/errors.js';
import type { LockClient } from '../locks/types.js';
import type { ContractBackend, ContractClientOptions } from './backend.js';

/** One check of the contract on one lock kind, runnable by any test runner. */
export interface ContractCase {
  /** `<subject>: <what it checks>`, e.g. `mutex: fencing tokens strictly increase across holders`. */
  readonly name: string;
  /** The lock kind it checks (a key of CONTRACT_SUBJECTS, or a kind of KIND_CONTRACTS). */
  readonly subject: string;
  /** How long it may take on a loaded machine, ms. */
  readonly timeoutMs: number;
  /** Why it does not apply to this backend or kind, when it does not (known before it runs). */
  readonly skip?: string;
  /**
   * Runs the check; rejects when the backend breaks the contract (a ContractViolation saying what was
   * violated, by whom, with the history that shows it). A check that finds, once running, that the
   * backend does not offer the kind (its capabilities) calls `context.skip(reason)` and returns.
   */
  run(context: ContractCaseContext): Promise<void>;
}

/** What a running case may ask of its runner. */
export interface ContractCaseContext {
  /** Marks the case skipped, with the reason (the case returns right after). */
  skip(reason: string): void;
}

/** Which of the contract's cases to make. */
export interface ContractOptions {
  /**
   * The lock kinds to check: keys of CONTRACT_SUBJECTS (their generic cases, and their own rules
   * where KIND_CONTRACTS has some) and kinds that have only rules of their own (`latch`, `election`).
   * All of them by default.
   */
  subjects?: readonly string[];
}

export const DEFAULT_TIMEOUT_MS = 60_000;

let unique = 0;
/** A lock name no other case of any process uses. */
export const lockName = (label: string): string => `contract-${label}-${process.pid}-${++unique}`;

/** The clients one case made: all closed when it ends. */
export class CaseClients {
  private readonly made: LockClient[] = [];
  constructor(private readonly backend: ContractBackend) {}

  async client(options?: ContractClientOptions): Promise<LockClient> {
    const client = await this.backend.client(options);
    this.made.push(client);
    return client;
  }

  async close(): Promise<void> {
    await Promise.all(this.made.map((c) => c.close()));
  }
}

/** A case's check: its clients, the backend's capabilities, and the runner's context. */
export type CaseCheck = (
  clients: CaseClients,
  capabilities: BackendCapabilities,
  context: ContractCaseContext,
) => Promise<void>;

/** A case's arguments after its kind: name, skip reason, check, and time limit. */
export type CaseArgs = [name: string, skip: string | false, check: CaseCheck, timeoutMs?: number];

/** How a group of cases of one kind is made: the backend, and where the cases go. */
export class CaseMaker {
  private known: Promise<BackendCapabilities> | undefined;
  readonly cases: ContractCase[] = [];

  constructor(readonly backend: ContractBackend) {}

  /** The backend's capabilities (from its first client unless the factory gives them). */
  capabilities(): Promise<BackendCapabilities> {
    this.known ??= (async () => {
      if (this.backend.capabilities) return this.backend.capabilities;
      const client = await this.backend.client();
      try {
        const found = (client as Partial<LockClientBase>).backend?.capabilities;
        if (!found)
          throw new Error('the client has no backend.capabilities: give them in the ContractBackend');
        return found;
      } finally {
        await client.close();
      }
    })();
    return this.known;
  }

  /**
   * Adds the case `<label>: <name>`. A kind whose `families` the backend declares unsupported is
   * skipped, but only after `refuses(client)` — its factory, called — threw UnsupportedLockKindError.
   */
  add(
    kind: { label: string; families: readonly LockFamily[]; refuses: (client: LockClient) => unknown },
    name: string,
    skip: string | false,
    check: CaseCheck,
    timeoutMs = DEFAULT_TIMEOUT_MS,
  ): void {
    const capabilities = () => this.capabilities();
    const backend = this.backend;
    this.cases.push({
      name: `${kind.label}: ${name}`,
      subject: kind.label,
      timeoutMs,
      ...(skip ? { skip } : {}),
      async run(context) {
        const clients = new CaseClients(backend);
        try {
          const offered = await capabilities();
          const missing = kind.families.find((family) => offered.unsupported[family] !== undefined);
          if (missing) {
            // Not offered: then its factory must say so at once, with the backend's reason.
            const client = await clients.client();
            assert.throws(() => kind.refuses(client), UnsupportedLockKindError);
            context.skip(`${missing} not offered: ${offered.unsupported[missing]}`);
            return;
          }
          await check(clients, offered, context);
        } finally {
          await clients.close();
        }
      },
    });
  }
}
