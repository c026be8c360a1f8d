import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { PostgresServer, RedisServer } from '@lockstock/servers';
import { checkRun, type RunResult } from './checker.js';
import { connectLab, prepareLabDatabase } from './env.js';
import { startLabServers, type LabServers } from './servers.js';
import { STRATEGIES, strategyByName } from './strategies/index.js';
import type { Attempt, LabRun } from './types.js';
import type { FromWorker, ToWorker } from './worker.js';

const workerPath = fileURLToPath(new URL('./worker.js', import.meta.url));
/** How much of a worker's stderr a failure quotes (its end: where the error is). */
const STDERR_KEPT = 4_000;

export interface LabOptions {
  strategies: string[];
  stock: number;
  buyers: number;
  processes: number;
  concurrency: number;
  runs: number;
  /** Per-strategy knobs, e.g. { 'sql-optimistic': { retries: 3 } }. */
  strategyOptions?: Record<string, Record<string, number | string | boolean>>;
  redisUrl?: string;
  databaseUrl?: string;
  /** Extra servers to use rather than start (ZooKeeper, etcd, MySQL), for strategies that need them. */
  servers?: LabServers;
  /** Progress callbacks (the CLI draws bars with them). */
  onRunStart?: (strategy: string, run: number) => void;
  onProgress?: (processIndex: number, done: number, total: number) => void;
  onRunDone?: (result: RunResult & { run: number }) => void;
}

interface Worker {
  child: ChildProcess;
  next<T extends FromWorker['type']>(type: T): Promise<Extract<FromWorker, { type: T }>>;
}

function startWorker(
  redisUrl: string,
  databaseUrl: string,
  servers: LabServers,
  onProgress: (done: number) => void,
): Worker {
  const child = fork(workerPath, [redisUrl, databaseUrl, JSON.stringify(servers)], {
    stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
  });
  // The worker's stderr still reaches ours; its end is kept, to say why a worker that dies died.
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    process.stderr.write(chunk);
    stderr = (stderr + chunk.toString('utf8')).slice(-STDERR_KEPT);
  });
  const waiting = new Map<string, (message: FromWorker) => void>();
  let failure: Error | undefined;
  child.on('message', (message: FromWorker) => {
    if (message.type === 'progress') return onProgress(message.done);
    if (message.type === 'failed') failure = new Error(`lab worker failed: ${message.error}`);
    const resolve = waiting.get(message.type) ?? (failure ? [...waiting.values()][0] : undefined);
    resolve?.(message);
  });
  // 'close', not 'exit': by then its stderr has been read to the end.
  child.on('close', (code, signal) => {
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    const said = stderr.trim();
    failure ??= new Error(
      `lab worker ${how}${said ? `; its stderr ended with:\n${said}` : ' (nothing on stderr)'}`,
    );
    for (const resolve of waiting.values()) resolve({ type: 'failed', error: failure.message });
  });
  return {
    child,
    next(type) {
      return new Promise((resolve, reject) => {
        if (failure) return reject(failure);
        waiting.set(type, (message) => {
          waiting.delete(type);
          if (message.type === 'failed') reject(failure ?? new Error(message.error));
          else resolve(message as never);
        });
      });
    },
  };
}

/**
 * Runs each strategy `runs` times as a real flash sale: fresh state, `processes` worker processes ×
 * `concurrency` concurrent buyers, a start barrier, then the checker reads what was recorded.
 * Without URLs it starts its own redis-server and PostgreSQL (several processes must share them),
 * and the extra servers (ZooKeeper, etcd, MariaDB) only when a selected strategy runs on them.
 */
export async function runLab(options: LabOptions): Promise<RunResult[]> {
  const selected = options.strategies.map(strategyByName);
  const redisServer = options.redisUrl ? undefined : await RedisServer.start();
  const postgres = options.databaseUrl ? undefined : await PostgresServer.start();
  const extraServers = await startLabServers(
    selected.flatMap((s) => s.servers ?? []),
    options.servers,
  ).catch(async (error: unknown) => {
    await Promise.all([redisServer?.stop(), postgres?.stop()]);
    throw error;
  });
  const redisUrl = options.redisUrl ?? (redisServer as RedisServer).url;
  const databaseUrl = options.databaseUrl ?? (postgres as PostgresServer).url;
  const workers: Worker[] = [];
  let env: Awaited<ReturnType<typeof connectLab>> | undefined;
  try {
    env = await connectLab(redisUrl, databaseUrl, 10, extraServers.servers);
    await prepareLabDatabase(env);
    for (let i = 0; i < options.processes; i++) {
      workers.push(
        startWorker(redisUrl, databaseUrl, extraServers.servers, (done) => options.onProgress?.(i, done, 0)),
      );
    }
    await Promise.all(workers.map((w) => w.next('ready')));
    const results: RunResult[] = [];
    for (const name of options.strategies) {
      const strategy = strategyByName(name);
      for (let run = 1; run <= options.runs; run++) {
        options.onRunStart?.(name, run);
        const labRun: LabRun = {
          runId: `${name}-${run}-${randomBytes(4).toString('hex')}`,
          stock: options.stock,
          options: { ...options.strategyOptions?.[name] },
        };
        const extra = await strategy.prepare(env, labRun);
        const prepared: LabRun = { ...labRun, options: { ...labRun.options, ...(extra ?? {}) } };
        const buyers = Array.from({ length: options.buyers }, (_, i) => `b${i}`);
        // Deal buyers round-robin so every process competes from the start.
        const shares = workers.map((_, w) => buyers.filter((_, i) => i % workers.length === w));
        await Promise.all(
          workers.map((worker, w) => {
            const prepared$ = worker.next('prepared');
            const message: ToWorker = {
              type: 'prepare',
              strategy: name,
              run: prepared,
              buyers: shares[w] as string[],
              concurrency: options.concurrency,
            };
            worker.child.send(message);
            return prepared$;
          }),
        );
        const done = workers.map((worker) => worker.next('done'));
        const started = performance.now();
        for (const worker of workers) worker.child.send({ type: 'go' } satisfies ToWorker);
        const attempts: Attempt[] = (await Promise.all(done)).flatMap((m) => m.attempts);
        const wallMs = performance.now() - started;
        const record = await strategy.inspect(env, prepared);
        const result = checkRun({
          strategy: name,
          stock: options.stock,
          processes: options.processes,
          attempts,
          wallMs,
          ...record,
        });
        results.push(result);
        options.onRunDone?.({ ...result, run });
      }
    }
    return results;
  } finally {
    for (const worker of workers) {
      if (worker.child.connected) worker.child.send({ type: 'exit' } satisfies ToWorker);
    }
    await Promise.all(
      workers.map((w) =>
        w.child.exitCode === null ? new Promise((resolve) => w.child.once('exit', resolve)) : undefined,
      ),
    );
    await env?.close();
    await Promise.all([
      redisServer?.stop(),
      postgres?.stop(),
      extraServers.stop(),
      ...STRATEGIES.filter((s) => options.strategies.includes(s.name)).map((s) => s.teardown?.()),
    ]);
  }
}
