/**
 * Child process of the uncontended benchmark (forked by uncontended.ts): one row's sample in a
 * process of its own, as an application runs one lock library. In the benchmark's own process every
 * library ran after the others, on a heap holding their garbage and with the shared ioredis compiled
 * for all of their call shapes: on 2026-11-24, 3 runs each way, a mutex pair cost lockstock's client
 * 10.8 µs there and 7.9 µs here, redis-semaphore's 21.3 and 19.7 µs.
 */
import { baseMutexAdapter, holderMutexAdapter, instrument } from './instrumentation.js';
import { createAdapter } from './libraries.js';
import { openRedisCpuReader } from './targets.js';
import { runUncontended, type UncontendedSample } from './uncontended.js';

async function main(sample: UncontendedSample): Promise<void> {
  const { variant, base } = sample.instrumentation ?? { variant: 'none' };
  // Subscribers first, as an application instruments itself before it takes locks.
  const uninstrument = await instrument(variant);
  const adapter =
    variant === 'base'
      ? await baseMutexAdapter(base ?? '', sample.spec.target, sample.spec.setting)
      : variant === 'holders'
        ? await holderMutexAdapter(sample.spec.target, sample.spec.setting)
        : await createAdapter(sample.spec);
  const redisCpu = openRedisCpuReader(sample.spec.target);
  let result;
  try {
    result = await runUncontended(adapter, { ...sample.options, redisCpuUs: redisCpu.read });
  } finally {
    redisCpu.close();
    await adapter.close();
    await uninstrument();
  }
  process.send?.({ type: 'done', result }, () => process.exit(0));
}

function fail(error: unknown): void {
  console.error(error);
  process.exit(1);
}

process.once('message', (sample: UncontendedSample) => void main(sample).catch(fail));
process.once('disconnect', () => process.exit(1)); // the benchmark is gone: stop, do not linger
