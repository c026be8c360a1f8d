import { createHash } from 'node:crypto';
import { ROOT_CONTEXT, SpanKind, trace, TraceFlags } from '@opentelemetry/api';
import { SamplingDecision, type Sampler } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SAMPLE_RATIO, defaultSampler } from '../../src/cli/tracing.js';

/** Trace ids of a fixed sequence (not random: the count below is the same on every run). */
const traceIds = (n: number) =>
  Array.from({ length: n }, (_, i) => createHash('sha256').update(`trace ${i}`).digest('hex').slice(0, 32));

function sampledRoots(sampler: Sampler, n: number): number {
  return traceIds(n).filter(
    (id) =>
      sampler.shouldSample(ROOT_CONTEXT, id, 'POST /api/sales/:id/orders', SpanKind.SERVER, {}, [])
        .decision === SamplingDecision.RECORD_AND_SAMPLED,
  ).length;
}

describe('the default trace sampler (issue 49: the recommended production sampling)', () => {
  it('samples about 1% of new traces and follows every sampled caller', async () => {
    expect(DEFAULT_SAMPLE_RATIO).toBe(0.01);
    const sampler = (await defaultSampler({})) as Sampler;
    const sampled = sampledRoots(sampler, 20_000);
    expect(sampled).toBeGreaterThan(100); // about 200
    expect(sampled).toBeLessThan(300);
    const parent = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: traceIds(1)[0] as string,
      spanId: '0123456789abcdef',
      traceFlags: TraceFlags.SAMPLED,
      isRemote: true,
    });
    const followed = traceIds(100).filter(
      (id) =>
        sampler.shouldSample(parent, id, 'x', SpanKind.SERVER, {}, []).decision ===
        SamplingDecision.RECORD_AND_SAMPLED,
    );
    expect(followed).toHaveLength(100);
  });

  it('takes OTEL_TRACES_SAMPLER_ARG as the ratio, and leaves a named sampler to the SDK', async () => {
    const tenth = (await defaultSampler({ OTEL_TRACES_SAMPLER_ARG: '0.1' })) as Sampler;
    expect(sampledRoots(tenth, 20_000)).toBeGreaterThan(1500); // about 2,000
    expect(await defaultSampler({ OTEL_TRACES_SAMPLER: 'parentbased_always_on' })).toBeUndefined();
  });
});
