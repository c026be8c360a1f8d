import { Counter, Histogram, Registry } from 'prom-client';
import { ATTEMPT_OUTCOMES } from './outcomes.js';

/** Prometheus metrics of the sale service and the order pipeline, in one registry. */
export function createSaleMetrics(registry = new Registry()) {
  const metrics = createMetrics(registry);
  // Every series an alert or a dashboard panel reads starts at 0, so it exists before the first event
  // (a rate over an absent series is no data, not 0; increase() misses a first event that creates it).
  for (const outcome of ATTEMPT_OUTCOMES) metrics.reservations.inc({ outcome }, 0);
  for (const status of ['confirmed', 'rejected']) metrics.ordersRecorded.inc({ status }, 0);
  for (const reason of ['limit_exceeded', 'sold_out']) metrics.ordersRejected.inc({ reason }, 0);
  for (const reason of ['malformed', 'failing', 'unknown_sale', 'unknown_order', 'conflict'])
    metrics.deadLetters.inc({ reason }, 0);
  for (const cause of ['missing', 'behind', 'recovering']) metrics.rebuilds.inc({ cause }, 0);
  metrics.duplicates.inc(0);
  return metrics;
}

function createMetrics(registry: Registry) {
  // Reservation outcomes are tallied in a plain Map on the purchase path and handed to the counter
  // when it is collected: prom-client validates and hashes the label set on every inc().
  const reservationTally = new Map<string, number>();
  return {
    registry,
    /** Add 1 to an outcome here, not on `reservations` (which reads it at every scrape). */
    reservationTally,
    reservations: new Counter({
      name: 'lockstock_reservations_total',
      help: 'Reservation attempts by outcome (reserved, duplicate, or the refusal code)',
      labelNames: ['outcome'] as const,
      registers: [registry],
      collect() {
        for (const [outcome, n] of reservationTally) this.inc({ outcome }, n);
        reservationTally.clear();
      },
    }),
    ordersRecorded: new Counter({
      name: 'lockstock_orders_recorded_total',
      help: 'Orders written to the database by the pipeline, by status (confirmed, rejected)',
      labelNames: ['status'] as const,
      registers: [registry],
    }),
    ordersRejected: new Counter({
      name: 'lockstock_orders_rejected_total',
      help: 'Reservations the database refused (Redis admitted more than the record allows), by reason',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    ordersSettled: new Counter({
      name: 'lockstock_orders_settled_total',
      help: 'Orders the pipeline moved from confirmed to paid, cancelled or expired in the database, by status',
      labelNames: ['status'] as const,
      registers: [registry],
    }),
    ordersLost: new Counter({
      name: 'lockstock_orders_lost_total',
      help: 'Acknowledged reservations neither Redis nor the record has, by reason (fenced: a rebuild went ahead without the pipeline holding them, whose lease had lapsed or which held the rebuild up too long)',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    duplicates: new Counter({
      name: 'lockstock_pipeline_duplicates_total',
      help: 'Stream entries delivered again after they had been applied (acknowledged, not re-applied)',
      registers: [registry],
    }),
    deadLetters: new Counter({
      name: 'lockstock_pipeline_dead_letters_total',
      help: 'Stream entries moved to the dead-letter stream, by reason',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    pipelineErrors: new Counter({
      name: 'lockstock_pipeline_errors_total',
      help: 'Failed pipeline batches, by kind (transient: retried; permanent: split and retried)',
      labelNames: ['kind'] as const,
      registers: [registry],
    }),
    rebuilds: new Counter({
      name: 'lockstock_sale_rebuilds_total',
      help: 'Sales this process rebuilt from the record, by cause (missing: Redis lost the sale; behind: Redis came back older than the record; recovering: a rebuild left unfinished)',
      labelNames: ['cause'] as const,
      registers: [registry],
    }),
    transferWait: new Histogram({
      name: 'lockstock_sale_transfer_wait_seconds',
      help: 'How long a buyer of a split sale waited from finding its part without units to its answer, by outcome (reserved: units moved in from another part; sold_out: the whole sale proven sold out; refused: another refusal on the retry)',
      labelNames: ['outcome'] as const,
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    transfersFinished: new Counter({
      name: 'lockstock_sale_transfers_finished_total',
      help: 'Transfers between the parts of split sales that the sweeper found pending (their process died or failed between debit and finish) and finished',
      registers: [registry],
    }),
    offersLapsed: new Counter({
      name: 'lockstock_sale_waitlist_offers_lapsed_total',
      help: 'Offers to waitlisted buyers that the sweeper found past their end and passed to the next in line (or to the stock)',
      registers: [registry],
    }),
    batchSeconds: new Histogram({
      name: 'lockstock_pipeline_batch_seconds',
      help: 'Time to record one batch of orders in the database',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
  };
}

export type SaleMetrics = ReturnType<typeof createSaleMetrics>;
