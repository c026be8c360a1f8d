/**
 * `lockstock/otel`: OpenTelemetry spans and metrics from the locks' diagnostics channels
 * (docs/instrumentation.md). Needs `@opentelemetry/api` (an optional peer dependency); nothing else
 * in lockstock imports it. `instrumentLocks()` subscribes to the channels and returns a disposer.
 *
 * @module lockstock/otel
 */
import diagnostics_channel from 'node:diagnostics_channel';
import { createRequire } from 'node:module';
import {
  context as contexts,
  isSpanContextValid,
  metrics,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type MeterProvider,
  type Span,
  type SpanContext,
  type TracerProvider,
} from '@opentelemetry/api';
import {
  LOCK_CHANNELS,
  type AcquireMessage,
  type BudgetMessage,
  type HandoffMessage,
  type HoldMessage,
  type LockMessage,
  type LostMessage,
  type RenewMessage,
} from '../locks/core/diagnostics.js';
import type { LockHandle } from '../locks/types.js';

/**
 * Options of `instrumentLocks`: where spans and metrics go (the global providers by default), and
 * whether metrics carry lock names.
 */
export interface InstrumentLocksOptions {
  /** Where spans go. @default the global tracer provider (`trace.getTracerProvider()`) */
  tracerProvider?: TracerProvider;
  /** Where metrics go. @default the global meter provider (`metrics.getMeterProvider()`) */
  meterProvider?: MeterProvider;
  /**
   * Adds `lockstock.lock.name` to the metrics' attributes. Off by default: lock names are often
   * per entity (`invoice:42`), one time series each. Spans always carry the name.
   * @default false
   */
  lockNameInMetrics?: boolean;
}

/** The attribute names (no OpenTelemetry semantic convention covers locks yet: see the docs). */
export const LOCK_ATTRIBUTES = {
  name: 'lockstock.lock.name',
  kind: 'lockstock.lock.kind',
  backend: 'lockstock.lock.backend',
  owner: 'lockstock.lock.owner',
  fencingToken: 'lockstock.lock.fencing_token',
  outcome: 'lockstock.lock.outcome',
  ended: 'lockstock.lock.hold.ended',
  lossReason: 'lockstock.lock.loss.reason',
  budgetAction: 'lockstock.lock.budget.action',
  handoffVia: 'lockstock.lock.handoff.via',
  errorType: 'error.type',
} as const;

/** The metric names and units. */
export const LOCK_METRICS = {
  waitDuration: 'lockstock.lock.wait.duration',
  holdDuration: 'lockstock.lock.hold.duration',
  acquisitions: 'lockstock.lock.acquisitions',
  losses: 'lockstock.lock.losses',
  renewalFailures: 'lockstock.lock.renewal.failures',
  waiters: 'lockstock.lock.waiter.count',
  handoffs: 'lockstock.lock.handoffs',
  budgetExceeded: 'lockstock.lock.budget.exceeded',
} as const;

const VERSION = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;

/** Waits and holds of locks: from a millisecond (an uncontended Redis lock) to minutes. */
const DURATION_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
];

/** The wall clock the SDK itself uses for span times (ms since the epoch, sub-millisecond). */
const now = () => performance.timeOrigin + performance.now();

/**
 * Subscribes to the lock diagnostics channels and records, until the returned disposer is called:
 * - spans: `lock.acquire` (the wait, from the call to the grant or the failure, child of the caller's
 *   active span) and `lock.hold` (grant → release or loss, recorded when the hold ends, a sibling
 *   of its acquire span and linked to it);
 * - metrics: wait and hold durations (s), acquisitions by outcome, losses by reason, renewal
 *   failures, hand-offs, budgets exceeded, and the acquires in progress (waiters).
 * Every process-wide lock client is covered (the channels are global); call it once.
 */
export function instrumentLocks(options: InstrumentLocksOptions = {}): () => void {
  const tracer = (options.tracerProvider ?? trace.getTracerProvider()).getTracer('lockstock', VERSION);
  const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter('lockstock', VERSION);
  const withName = options.lockNameInMetrics === true;

  const waitDuration = meter.createHistogram(LOCK_METRICS.waitDuration, {
    unit: 's',
    description: 'How long acquires waited: from the call to the grant or the failure.',
    advice: { explicitBucketBoundaries: DURATION_BUCKETS },
  });
  const holdDuration = meter.createHistogram(LOCK_METRICS.holdDuration, {
    unit: 's',
    description: 'How long holds lasted: from the grant to the release or the loss.',
    advice: { explicitBucketBoundaries: DURATION_BUCKETS },
  });
  const acquisitions = meter.createCounter(LOCK_METRICS.acquisitions, {
    unit: '{acquisition}',
    description: 'Acquires that ended, by outcome (acquired, busy, timeout, aborted, closed, error).',
  });
  const losses = meter.createCounter(LOCK_METRICS.losses, {
    unit: '{loss}',
    description: 'Holds lost before their release, by reason.',
  });
  const renewalFailures = meter.createCounter(LOCK_METRICS.renewalFailures, {
    unit: '{failure}',
    description: 'Lease renewals that failed (retried until the lease ends).',
  });
  const waiters = meter.createUpDownCounter(LOCK_METRICS.waiters, {
    unit: '{waiter}',
    description: 'Acquires in progress (waiting, or on their first try).',
  });
  const handoffs = meter.createCounter(LOCK_METRICS.handoffs, {
    unit: '{handoff}',
    description: 'Releases that handed the lock straight to a waiter of the same client.',
  });
  const budgetExceeded = meter.createCounter(LOCK_METRICS.budgetExceeded, {
    unit: '{hold}',
    description: 'Holds that outlived their holdBudgetMs.',
  });

  const metricAttributes = (message: LockMessage): Attributes => ({
    [LOCK_ATTRIBUTES.kind]: message.kind,
    [LOCK_ATTRIBUTES.backend]: message.backend,
    ...(withName ? { [LOCK_ATTRIBUTES.name]: message.name } : {}),
  });
  const spanAttributes = (message: LockMessage): Attributes => ({
    [LOCK_ATTRIBUTES.name]: message.name,
    [LOCK_ATTRIBUTES.kind]: message.kind,
    [LOCK_ATTRIBUTES.backend]: message.backend,
    [LOCK_ATTRIBUTES.owner]: message.owner,
  });

  /** Acquires in progress: the context object is the same from start to asyncEnd. */
  const acquiring = new WeakMap<AcquireMessage, { span: Span; parent: Context; attributes: Attributes }>();
  /** Holds granted under a recorded acquire: their hold span links to it and shares its parent. */
  const granted = new WeakMap<LockHandle, { acquire: SpanContext; parent: Context }>();

  const tracing = {
    start(message: AcquireMessage) {
      const parent = contexts.active();
      const span = tracer.startSpan(
        'lock.acquire',
        { kind: SpanKind.INTERNAL, attributes: spanAttributes(message) },
        parent,
      );
      const attributes = metricAttributes(message);
      // The hold's holder metadata records the trace that took it: inspect().heldBy shows it.
      const spanContext = span.spanContext();
      if (isSpanContextValid(spanContext)) message.traceId = spanContext.traceId;
      acquiring.set(message, { span, parent, attributes });
      waiters.add(1, attributes);
    },
    end() {},
    asyncStart() {},
    error() {},
    asyncEnd(message: AcquireMessage) {
      const entry = acquiring.get(message);
      if (!entry) return; // started before instrumentLocks
      acquiring.delete(message);
      const { span, parent, attributes } = entry;
      waiters.add(-1, attributes);
      const outcome = message.outcome ?? 'error';
      span.setAttribute(LOCK_ATTRIBUTES.outcome, outcome);
      if (message.fencingToken !== undefined) {
        span.setAttribute(LOCK_ATTRIBUTES.fencingToken, message.fencingToken);
      }
      if (outcome === 'error' || outcome === 'closed') {
        const error = message.error;
        span.setAttribute(LOCK_ATTRIBUTES.errorType, errorType(error));
        if (error instanceof Error) span.recordException(error);
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: error instanceof Error ? error.message : outcome,
        });
      }
      span.end();
      const outcomeAttributes = { ...attributes, [LOCK_ATTRIBUTES.outcome]: outcome };
      waitDuration.record((message.waitMs ?? 0) / 1_000, outcomeAttributes);
      acquisitions.add(1, outcomeAttributes);
      if (message.handle) granted.set(message.handle, { acquire: span.spanContext(), parent });
    },
  };

  const onHold = (raw: unknown) => {
    const message = raw as HoldMessage;
    const entry = granted.get(message.handle);
    granted.delete(message.handle);
    const endTime = now();
    const span = tracer.startSpan(
      'lock.hold',
      {
        kind: SpanKind.INTERNAL,
        startTime: endTime - message.heldMs,
        attributes: {
          ...spanAttributes(message),
          [LOCK_ATTRIBUTES.fencingToken]: message.fencingToken,
          [LOCK_ATTRIBUTES.ended]: message.ended,
          [LOCK_ATTRIBUTES.outcome]: message.outcome,
        },
        links: entry ? [{ context: entry.acquire }] : [],
      },
      entry?.parent ?? contexts.active(),
    );
    if (message.ended === 'lost' || message.outcome === 'error') {
      span.setAttribute(LOCK_ATTRIBUTES.errorType, message.ended === 'lost' ? 'lock_lost' : 'release_failed');
      span.setStatus({ code: SpanStatusCode.ERROR, message: `${message.ended}: ${message.outcome}` });
    }
    span.end(endTime);
    holdDuration.record(message.heldMs / 1_000, {
      ...metricAttributes(message),
      [LOCK_ATTRIBUTES.ended]: message.ended,
    });
  };
  const onLost = (raw: unknown) => {
    const message = raw as LostMessage;
    losses.add(1, { ...metricAttributes(message), [LOCK_ATTRIBUTES.lossReason]: message.reason });
  };
  const onRenew = (raw: unknown) => {
    const message = raw as RenewMessage;
    if (message.outcome === 'failed') renewalFailures.add(1, metricAttributes(message));
  };
  const onHandoff = (raw: unknown) => {
    const message = raw as HandoffMessage;
    handoffs.add(1, { ...metricAttributes(message), [LOCK_ATTRIBUTES.handoffVia]: message.via });
  };
  const onBudget = (raw: unknown) => {
    const message = raw as BudgetMessage;
    budgetExceeded.add(1, { ...metricAttributes(message), [LOCK_ATTRIBUTES.budgetAction]: message.action });
  };

  const acquire = diagnostics_channel.tracingChannel<unknown, AcquireMessage>(LOCK_CHANNELS.acquire);
  const plain: Array<[string, (message: unknown) => void]> = [
    [LOCK_CHANNELS.hold, onHold],
    [LOCK_CHANNELS.lost, onLost],
    [LOCK_CHANNELS.renew, onRenew],
    [LOCK_CHANNELS.handoff, onHandoff],
    [LOCK_CHANNELS.budget, onBudget],
  ];
  acquire.subscribe(tracing);
  for (const [name, listener] of plain) diagnostics_channel.subscribe(name, listener);
  let disposed = false;
  return () => {
    if (disposed) return;
    disposed = true;
    acquire.unsubscribe(tracing);
    for (const [name, listener] of plain) diagnostics_channel.unsubscribe(name, listener);
  };
}

/** `error.type`: the error's stable code when it has one (ERR_LOCK_BACKEND...), else its class name. */
function errorType(error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    return error.constructor.name;
  }
  return '_OTHER';
}
