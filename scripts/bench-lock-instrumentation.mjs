// What lockstock's instrumentation costs an uncontended lock (issue 37): acquire + release pairs/s
// on a private redis-server, each variant in a fresh process, variants alternating round by round,
// medians reported: the rate, and the client's CPU per pair (user + system µs), which moves less with
// what else runs on the machine than the rate does.
//   node scripts/bench-lock-instrumentation.mjs [--base <another checkout>] [--rounds 5] [--ms 3000] [--loops 8]
//                                              [--backend redis|local]
// --backend local: the in-process backend, no network — what the core itself costs per pair, so the
// instrumentation's share is larger there than on any real backend (an upper bound on its cost).
// Variants:
//   base      --base's packages/lockstock/dist (e.g. a worktree of the commit before), no subscriber
//   none      this checkout's dist, no subscriber (the cost of the hasSubscribers checks)
//   channels  a no-op subscriber on every lockstock diagnostics channel (messages built and published)
//   otel      lockstock/otel's instrumentLocks() with the OpenTelemetry SDK: a BatchSpanProcessor
//             with an exporter that drops the spans, and a MeterProvider whose reader never exports
//             during the run (what the SDK and the instrumentation cost, without a network)
// Build first (npm run build; the base checkout: node scripts/build.mjs packages/lockstock).
import { fork } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const self = fileURLToPath(import.meta.url);
const here = resolve(dirname(self), '..');

if (process.argv[2] === '--child') await child(JSON.parse(process.argv[3]));
else await main();

async function main() {
  const { values } = parseArgs({
    options: {
      base: { type: 'string' },
      rounds: { type: 'string', default: '5' },
      ms: { type: 'string', default: '3000' },
      loops: { type: 'string', default: '8' },
      backend: { type: 'string', default: 'redis' },
    },
  });
  const { RedisServer } = await import('@lockstock/servers');
  const redis = values.backend === 'redis' ? await RedisServer.start() : undefined;
  const variants = [
    ...(values.base ? [{ variant: 'base', root: resolve(values.base) }] : []),
    { variant: 'none', root: here },
    { variant: 'channels', root: here },
    { variant: 'otel', root: here },
  ];
  const rates = Object.fromEntries(variants.map((v) => [v.variant, []]));
  const cpus = Object.fromEntries(variants.map((v) => [v.variant, []]));
  try {
    for (let round = 0; round < Number(values.rounds); round++) {
      // Each round in another order, so no variant always runs right after the same one.
      const order = variants.map((_, i) => variants[(i + round) % variants.length]);
      for (const v of order) {
        const spec = {
          ...v,
          url: redis?.url,
          backend: values.backend,
          ms: Number(values.ms),
          loops: Number(values.loops),
        };
        const { rate, cpuUs } = await runChild(spec);
        rates[v.variant].push(rate);
        cpus[v.variant].push(cpuUs);
        process.stderr.write(
          `round ${round + 1} ${v.variant}: ${Math.round(rate)} pairs/s, ${cpuUs.toFixed(1)} µs CPU/pair\n`,
        );
      }
    }
  } finally {
    await redis?.stop();
  }
  const median = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  };
  const ref = values.base ? 'base' : 'none';
  const refRate = median(rates[ref]);
  const refCpu = median(cpus[ref]);
  console.log(`variant    pairs/s (median)  vs ${ref}   CPU µs/pair (median)  vs ${ref}   rates`);
  for (const v of variants) {
    const rate = median(rates[v.variant]);
    const cpu = median(cpus[v.variant]);
    console.log(
      [
        v.variant.padEnd(10),
        String(Math.round(rate)).padStart(16),
        `${(rate / refRate).toFixed(3)}×`.padStart(9),
        cpu.toFixed(1).padStart(20),
        `${(cpu / refCpu).toFixed(3)}×`.padStart(9),
        `  ${rates[v.variant].map(Math.round).join(' ')}`,
      ].join(''),
    );
  }
}

function runChild(spec) {
  return new Promise((resolvePromise, reject) => {
    const worker = fork(self, ['--child', JSON.stringify(spec)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    worker.once('message', (message) => resolvePromise(message));
    worker.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`child exited ${code}`))));
  });
}

async function child({ variant, root, url, backend, ms, loops }) {
  const dist = join(root, 'packages', 'lockstock', 'dist');
  const lockstock = await import(pathToFileURL(join(dist, 'index.js')).href);
  let dispose = () => undefined;
  if (variant === 'channels') {
    const channels = await import('node:diagnostics_channel');
    const noop = () => undefined;
    const { LOCK_CHANNELS } = lockstock;
    channels
      .tracingChannel(LOCK_CHANNELS.acquire)
      .subscribe({ start: noop, end: noop, asyncStart: noop, asyncEnd: noop, error: noop });
    for (const name of ['hold', 'release', 'renew', 'lost', 'handoff', 'budget']) {
      channels.subscribe(LOCK_CHANNELS[name], noop);
    }
  } else if (variant === 'otel') {
    const { BasicTracerProvider, BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
    const { MeterProvider, PeriodicExportingMetricReader, InMemoryMetricExporter, AggregationTemporality } =
      await import('@opentelemetry/sdk-metrics');
    const { instrumentLocks } = await import(pathToFileURL(join(dist, 'otel', 'index.js')).href);
    const dropped = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => undefined };
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropped)] });
    const reader = new PeriodicExportingMetricReader({
      exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
      exportIntervalMillis: 3_600_000,
    });
    const meterProvider = new MeterProvider({ readers: [reader] });
    dispose = instrumentLocks({ tracerProvider, meterProvider });
  }
  const locks =
    backend === 'local'
      ? new (await import(pathToFileURL(join(dist, 'local', 'index.js')).href)).LocalLockClient()
      : new lockstock.RedisLockClient({ redis: url });
  const run = async (durationMs) => {
    let pairs = 0;
    const started = performance.now();
    // The clock, not a timer: a local lock's acquire and release may never leave the microtask queue.
    const end = started + durationMs;
    await Promise.all(
      Array.from({ length: loops }, async (_, i) => {
        const lock = locks.mutex(`bench-instr-${process.pid}-${i}`);
        while (performance.now() < end) {
          const held = await lock.acquire();
          await held.release();
          pairs++;
        }
      }),
    );
    return { pairs, elapsedMs: performance.now() - started };
  };
  await run(Math.min(1_000, ms)); // warm-up: JIT, scripts loaded
  const cpuBefore = process.cpuUsage();
  const { pairs, elapsedMs } = await run(ms);
  const cpu = process.cpuUsage(cpuBefore);
  dispose();
  await locks.close();
  const result = { rate: (pairs * 1_000) / elapsedMs, cpuUs: (cpu.user + cpu.system) / pairs };
  process.send(result, () => process.exit(0));
}
