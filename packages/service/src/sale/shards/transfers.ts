import type { ScriptRunner } from 'lockstock/redis';
import type { SaleRedis } from '../redis.js';
import type { PartKeys } from './layout.js';
import { partScripts } from './scripts.js';

/** One part as one read (part-state.lua) found it. */
export interface PartState {
  /** Units left (-1: the part is missing in Redis). */
  readonly stock: number;
  /** Units debited for transfers not finished. */
  readonly inflight: number;
  readonly version: string;
  readonly recovering: boolean;
  /** When the part was read, microseconds since the epoch (Redis clock of the part's master). */
  readonly atUs: number;
}

/** A pending outgoing transfer as the donor recorded it. */
export interface PendingTransfer {
  readonly id: string;
  readonly from: number;
  readonly to: number;
  readonly units: number;
  /** When it was debited, ms (Redis clock). */
  readonly atMs: number;
}

const noIds = (): string => {
  throw new Error('this Transfers has no id generator: it only finishes pending transfers');
};

/**
 * The fault point of the crash test (inert unless LOCKSTOCK_FAULT=transfer-debited): the process kills
 * itself right after its first debit, before the credit — a transfer left pending for others to finish.
 */
const killAfterDebit = process.env.LOCKSTOCK_FAULT === 'transfer-debited';

/**
 * Moving units between the parts of a split sale (see ARCHITECTURE.md, "One sale across shards"):
 * debit the donor (transfer-out.lua), credit the receiver once (transfer-in.lua), finish at the donor
 * (transfer-done.lua). Each step is one script on one slot; a crash between them leaves a pending
 * transfer in the donor's `transfers` hash, which any process finishes (`finishPending`): credit and
 * finish are idempotent, so finishing a transfer its own process is still finishing is harmless.
 */
export class Transfers {
  /** Finishes started in the background (awaited by `settled`, for tests and shutdown). */
  private readonly finishing = new Set<Promise<unknown>>();

  constructor(
    private readonly redis: SaleRedis,
    private readonly scripts: ScriptRunner,
    /** Ids of new transfers (a snowflake generator); not needed to finish pending ones. */
    private readonly nextId: () => string = noIds,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /**
   * Every part's stock, inflight, version and recovery flag, with the Redis time of each read: one
   * script per part (part-state.lua), all at once.
   */
  async collect(parts: readonly PartKeys[]): Promise<PartState[]> {
    const replies = await Promise.all(
      parts.map(
        (keys) =>
          this.scripts.run(
            partScripts.state,
            [keys.stock, keys.inflight, keys.version, keys.recovering],
            [],
          ) as Promise<[string | null, string | null, string | null, number, string]>,
      ),
    );
    return replies.map(([stock, inflight, version, recovering, atUs]) => ({
      stock: stock === null ? -1 : Number(stock),
      inflight: Number(inflight ?? 0),
      version: version ?? '',
      recovering: recovering === 1,
      atUs: Number(atUs),
    }));
  }

  /**
   * Moves units from `from` to `to`: at least `wanted` if the donor has them, and at least half of
   * what it has. Returns the units credited to `to` now (0: the donor had none, or the credit could
   * not be made now — the transfer then stays pending and is finished later).
   */
  async move(from: PartKeys, to: PartKeys, wanted: number): Promise<number> {
    const id = this.nextId();
    const units = Number(
      await this.scripts.run(
        partScripts.transferOut,
        [from.stock, from.inflight, from.transfers, from.version, from.stream, from.recovering],
        [id, to.part, wanted],
      ),
    );
    if (units <= 0) return 0;
    if (killAfterDebit) {
      process.stdout.write(`fault:transfer-debited ${id}\n`);
      process.kill(process.pid, 'SIGKILL');
    }
    const credited = await this.credit(to, { id, from: from.part, to: to.part, units, atMs: 0 });
    if (!credited) return 0;
    this.finishLater(from, id);
    return units;
  }

  /**
   * Finishes the transfers pending at `donor` (all, or those debited before `olderThanMs` on the
   * Redis clock): credit, then finish. `partsByIndex` gives each receiver's keys. Returns how many
   * were finished; a transfer whose receiver cannot be credited now (being rebuilt) stays pending.
   */
  async finishPending(
    donor: PartKeys,
    partsByIndex: readonly PartKeys[],
    olderThanMs = Number.POSITIVE_INFINITY,
  ): Promise<number> {
    let finished = 0;
    for (const transfer of await this.pending(donor)) {
      if (transfer.atMs >= olderThanMs) continue;
      const receiver = partsByIndex[transfer.to];
      if (!receiver) continue; // a malformed record: reconcile reports it
      if (!(await this.credit(receiver, transfer))) continue;
      if ((await this.finish(donor, transfer.id)) === 1) finished++;
    }
    return finished;
  }

  /** The transfers pending at a donor part. */
  async pending(donor: PartKeys): Promise<PendingTransfer[]> {
    const records = await this.redis.hgetall(donor.transfers);
    const pending: PendingTransfer[] = [];
    for (const [id, value] of Object.entries(records)) {
      const [to, units, atMs] = value.split(':').map(Number);
      if (to === undefined || units === undefined || atMs === undefined) continue;
      pending.push({ id, from: donor.part, to, units, atMs });
    }
    return pending;
  }

  /** Waits for the finishes started in the background. */
  async settled(): Promise<void> {
    while (this.finishing.size > 0) await Promise.allSettled([...this.finishing]);
  }

  private async credit(receiver: PartKeys, transfer: PendingTransfer): Promise<boolean> {
    const answer = await this.scripts.run(
      partScripts.transferIn,
      [receiver.stock, receiver.credits, receiver.version, receiver.stream, receiver.recovering],
      [transfer.id, transfer.from, transfer.units],
    );
    return answer === 'credited';
  }

  private async finish(donor: PartKeys, id: string): Promise<number> {
    return Number(
      await this.scripts.run(
        partScripts.transferDone,
        [donor.inflight, donor.transfers, donor.version, donor.recovering],
        [id],
      ),
    );
  }

  /**
   * The donor's half of a credited transfer, off the buyer's path: the buyer only needs the credit.
   * Until it is done the units count in the donor's `inflight` too, which only delays a sold-out
   * answer; a failure leaves it pending, and the sweeper finishes it.
   */
  private finishLater(donor: PartKeys, id: string): void {
    const done = this.finish(donor, id).then(
      () => undefined,
      (error: unknown) => this.onError(error),
    );
    this.finishing.add(done);
    void done.finally(() => this.finishing.delete(done));
  }
}
