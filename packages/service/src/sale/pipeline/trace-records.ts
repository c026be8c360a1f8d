import type { Decision, StreamEntry } from '../store/decide.js';
import { contextFrom, SpanKind, SpanStatusCode, tracer } from '../../support/tracing.js';
import type { ReadEntry } from './stream.js';

/**
 * The recording of traced reservations (support/tracing.ts): one CONSUMER span per order whose stream
 * entry carries a traceparent (field `tp`), a child of the purchase's reservation span — so a buyer's
 * trace shows its order reaching the record — covering the batch's transaction (`startedAt` to now),
 * with the record's verdict. Called only when tracing is on.
 */
export function traceRecorded(
  decisions: readonly Decision[],
  byOrder: ReadonlyMap<StreamEntry, ReadEntry>,
  startedAt: number,
  batchSize: number,
): void {
  const now = Date.now();
  for (const decision of decisions) {
    if (decision.entry.kind !== 'reservation') continue;
    const read = byOrder.get(decision.entry);
    const tp = read && fieldOf(read.fields, 'tp');
    if (!tp) continue;
    const span = tracer().startSpan(
      'lockstock.order.record',
      {
        kind: SpanKind.CONSUMER,
        startTime: startedAt,
        attributes: {
          'messaging.system': 'redis',
          'messaging.operation.type': 'process',
          'messaging.operation.name': 'record',
          'messaging.destination.name': read.stream,
          'messaging.message.id': read.id,
          'messaging.batch.message_count': batchSize,
          'db.system.name': 'postgresql',
          'lockstock.order.id': decision.entry.orderId,
          'lockstock.sale.id': decision.entry.saleId,
          'lockstock.outcome': decision.outcome,
        },
      },
      contextFrom({ traceparent: tp }),
    );
    if (decision.outcome === 'rejected')
      span.setStatus({ code: SpanStatusCode.ERROR, message: decision.reason });
    span.end(now);
  }
}

function fieldOf(fields: readonly string[], name: string): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}
