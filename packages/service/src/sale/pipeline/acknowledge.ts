import type { ScriptRunner } from 'lockstock/redis';
import type { SaleContext } from '../context/context.js';
import { ORDER_GROUP, saleIdOfKey } from '../keys.js';
import { deadlineMember, lifecycleScripts } from '../lifecycle/scripts.js';
import type { Logger } from '../logger.js';
import type { SaleMetrics } from '../metrics.js';
import type { SaleRedis } from '../redis.js';
import { partOfTag, tagOfKey } from '../shards/layout.js';
import type { Decision, StreamEntry } from '../store/decide.js';
import { parsePartEntry, parseStreamEntry, type ReadEntry } from './stream.js';

export interface AcknowledgerOptions {
  readonly logger: Logger;
  readonly metrics?: SaleMetrics | undefined;
}

/**
 * What the order pipeline does with an entry once the record has decided it: opens a confirmed
 * order for payment, acknowledges (XACK) it, counts and logs the outcome — or moves an entry the
 * record cannot take to its sale's dead-letter stream. Also reads an entry back into an order
 * (`parse`), since which key set an entry belongs to comes from its stream's name.
 */
export class Acknowledger {
  private readonly scripts: ScriptRunner;
  private readonly redis: SaleRedis;

  constructor(
    private readonly context: SaleContext,
    private readonly options: AcknowledgerOptions,
  ) {
    this.redis = context.redis;
    this.scripts = context.scripts;
  }

  /** An entry of a sale's stream, or of a split sale's part stream (its part from the stream's tag). */
  parse(entry: ReadEntry): StreamEntry | undefined {
    const saleId = saleIdOf(entry.stream);
    const tag = tagOfKey(entry.stream);
    const part = tag === undefined ? undefined : partOfTag(tag);
    return part === undefined ? parseStreamEntry(saleId, entry) : parsePartEntry(saleId, part, entry);
  }

  /** The key set a stream belongs to (a sale's, or a part's): its deadlines, settled, dead letters. */
  private keysOfStream(stream: string) {
    return this.context.keys.ofTag(tagOfKey(stream) ?? `sale:${saleIdOf(stream)}`);
  }

  /** Opens, acknowledges and reports what the record decided; dead-letters what it could not take. */
  async acknowledge(decisions: Decision[], byOrder: Map<StreamEntry, ReadEntry>): Promise<void> {
    await this.openForPayment(decisions, byOrder);
    const byStream = new Map<string, string[]>();
    for (const decision of decisions) {
      const entry = byOrder.get(decision.entry) as ReadEntry;
      if (decision.outcome === 'unknown_sale') {
        const { saleId } = decision.entry;
        await this.deadLetter(entry, 'unknown_sale', `sale ${saleId} is not in the database`);
        continue;
      }
      if (decision.outcome === 'unknown_order' || decision.outcome === 'conflict') {
        const found = decision.outcome === 'conflict' ? `holds it as ${decision.found}` : 'has no such order';
        const { orderId, status } = decision.entry;
        await this.deadLetter(
          entry,
          decision.outcome,
          `order ${orderId} is ${status} in Redis; the record ${found}`,
        );
        continue;
      }
      const ids = byStream.get(entry.stream) ?? [];
      ids.push(entry.id);
      byStream.set(entry.stream, ids);
      this.report(decision);
    }
    for (const [stream, ids] of byStream) await this.redis.xack(stream, ORDER_GROUP, ...ids);
  }

  /**
   * Puts the orders just recorded as confirmed (and redelivered ones still confirmed) into their sale's
   * deadlines set, before they are acknowledged: a crash in between redelivers them and they are
   * opened again; the script leaves orders settled meanwhile closed.
   */
  private async openForPayment(decisions: Decision[], byOrder: Map<StreamEntry, ReadEntry>): Promise<void> {
    // By the stream's key set: a split sale's orders wait in their part's deadlines set.
    const byStream = new Map<string, Array<string | number>>();
    for (const decision of decisions) {
      const byMs =
        decision.outcome === 'confirmed'
          ? decision.payByMs
          : decision.outcome === 'duplicate' && 'reopenByMs' in decision
            ? decision.reopenByMs
            : null;
      const entry = decision.entry;
      if (byMs === null || entry.kind === 'move') continue;
      const { orderId, userId, quantity } = entry;
      const stream = (byOrder.get(entry) as ReadEntry).stream;
      const args = byStream.get(stream) ?? [];
      args.push(deadlineMember(orderId, userId, quantity), byMs);
      byStream.set(stream, args);
    }
    for (const [stream, args] of byStream) {
      const keys = this.keysOfStream(stream);
      await this.scripts.run(lifecycleScripts.openOrders, [keys.deadlines, keys.settled], args);
    }
  }

  private report(decision: Decision): void {
    const metrics = this.options.metrics;
    if (decision.entry.kind === 'settlement') {
      if (decision.outcome === 'settled') metrics?.ordersSettled.inc({ status: decision.entry.status });
      else if (decision.outcome === 'duplicate') metrics?.duplicates.inc();
      return;
    }
    switch (decision.outcome) {
      case 'confirmed':
        metrics?.ordersRecorded.inc({ status: 'confirmed' });
        break;
      case 'rejected':
        metrics?.ordersRecorded.inc({ status: 'rejected' });
        metrics?.ordersRejected.inc({ reason: decision.reason });
        this.options.logger.warn(
          {
            orderId: decision.entry.orderId,
            saleId: decision.entry.saleId,
            userId: decision.entry.userId,
            reason: decision.reason,
          },
          'reservation rejected by the database (Redis admitted more than the record allows)',
        );
        break;
      case 'duplicate':
        metrics?.duplicates.inc();
        break;
      default:
        break;
    }
  }

  /** Moves `entry` to its sale's dead-letter stream and acknowledges it: logged and counted, never dropped. */
  async deadLetter(entry: ReadEntry, reason: string, detail: string): Promise<void> {
    const keys = this.keysOfStream(entry.stream); // on the stream's slot: one MULTI
    await this.redis
      .multi()
      .xadd(
        keys.dead,
        '*',
        'stream',
        entry.stream,
        'id',
        entry.id,
        'reason',
        reason,
        'detail',
        detail,
        ...entry.fields,
      )
      .xack(entry.stream, ORDER_GROUP, entry.id)
      .exec();
    this.options.metrics?.deadLetters.inc({ reason });
    this.options.logger.error(
      { stream: entry.stream, id: entry.id, reason, detail },
      'order entry dead-lettered',
    );
  }
}

function saleIdOf(stream: string): string {
  return saleIdOfKey(stream) ?? '';
}
