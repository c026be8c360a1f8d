import { Counter, Gauge, type Registry } from 'prom-client';
import type { PipelineHealth } from '../sale/pipeline/order-pipeline.js';
import { droppedSpans } from '../support/span-drops.js';
import { SERVICE_INSTANCE_ID, serviceName, type ProcessRole } from './tracing.js';

/**
 * What every process's /metrics says about the process itself (issue 47): who it is — the same
 * identity its traces carry — and how its order pipelines and its tracer fare. Alerts key on these:
 * a target that reported `role="worker"` and stops answering is a dead or frozen worker.
 */
export function registerProcessMetrics(
  registry: Registry,
  role: ProcessRole,
  pipelines: () => readonly PipelineHealth[],
): void {
  new Gauge({
    name: 'lockstock_process_info',
    help: 'Always 1: who this process is (role: serve, serve-http, worker; the service name and instance id its traces carry)',
    labelNames: ['role', 'service_name', 'service_instance_id'] as const,
    registers: [registry],
  }).set({ role, service_name: serviceName(role), service_instance_id: SERVICE_INSTANCE_ID }, 1);
  new Gauge({
    name: 'lockstock_pipeline_consumers',
    help: 'Order pipeline consumers running in this process (0: it records nothing)',
    registers: [registry],
    collect() {
      this.set(pipelines().filter((p) => p.running).length);
    },
  });
  new Gauge({
    name: 'lockstock_pipeline_failing_seconds',
    help: "How long this process's longest-failing pipeline consumer has failed every step (its database or Redis is down), s; 0: none fails",
    registers: [registry],
    collect() {
      const since = pipelines()
        .map((p) => p.failingSince)
        .filter((t): t is number => t !== undefined);
      this.set(since.length === 0 ? 0 : Math.max(0, Date.now() - Math.min(...since)) / 1000);
    },
  });
  registerSpanDrops(registry);
}

/** Spans dropped by this thread's tracer (its queue full); the order thread registers its own. */
export function registerSpanDrops(registry: Registry): void {
  let reported = 0;
  new Counter({
    name: 'lockstock_trace_spans_dropped_total',
    help: 'Spans the tracer dropped because its export queue was full (OTEL_BSP_MAX_QUEUE_SIZE): traces with holes',
    registers: [registry],
    collect() {
      const now = droppedSpans();
      this.inc(now - reported);
      reported = now;
    },
  });
}
