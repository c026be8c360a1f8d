/**
 * Spans this thread's tracer dropped because its export queue was full (cli/tracing.ts counts them;
 * `lockstock_trace_spans_dropped_total` reads them). A plain number: the tracer starts before the
 * metrics registry exists, and an untraced process never adds to it.
 */
let dropped = 0;

export function countDroppedSpans(n: number): void {
  dropped += n;
}

export function droppedSpans(): number {
  return dropped;
}
