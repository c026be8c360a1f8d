/**
 * A worker process of the lab (forked by runner.ts): plays `concurrency` buyers at once for each run
 * it is given, after a start barrier, and reports every attempt's outcome and latency.
 */
import { connectLab } from './env.js';
import type { LabServers } from './servers.js';
import { strategyByName } from './strategies/index.js';
import type { Attempt, LabRun } from './types.js';

export type ToWorker =
  | { type: 'prepare'; strategy: string; run: LabRun; buyers: string[]; concurrency: number }
  | { type: 'go' }
  | { type: 'exit' };

export type FromWorker =
  | { type: 'ready' }
  | { type: 'prepared' }
  | { type: 'progress'; done: number }
  | { type: 'done'; attempts: Attempt[] }
  | { type: 'failed'; error: string };

const send = (message: FromWorker) => process.send?.(message);

async function main(): Promise<void> {
  const [redisUrl, databaseUrl, servers] = process.argv.slice(2) as [string, string, string];
  const env = await connectLab(redisUrl, databaseUrl, 12, JSON.parse(servers) as LabServers);
  let pending:
    { buy: (buyer: string) => Promise<boolean>; buyers: string[]; concurrency: number } | undefined;

  // The coordinator is gone (it exited or was killed): nobody will read our results.
  process.once('disconnect', () => process.exit(1));
  process.on('message', (message: ToWorker) => {
    void (async () => {
      if (message.type === 'prepare') {
        const buy = await strategyByName(message.strategy).buyer(env, message.run);
        pending = { buy, buyers: message.buyers, concurrency: message.concurrency };
        send({ type: 'prepared' });
      } else if (message.type === 'go' && pending) {
        const { buy, buyers, concurrency } = pending;
        pending = undefined;
        send({ type: 'done', attempts: await play(buy, buyers, concurrency) });
      } else if (message.type === 'exit') {
        await env.close();
        process.exit(0);
      }
    })().catch((error: unknown) => send({ type: 'failed', error: String((error as Error)?.stack ?? error) }));
  });
  send({ type: 'ready' });
}

/** All lanes start together; each takes the next buyer until none are left. */
async function play(buy: (buyer: string) => Promise<boolean>, buyers: string[], concurrency: number) {
  const attempts: Attempt[] = [];
  let next = 0;
  const progress = setInterval(() => send({ type: 'progress', done: attempts.length }), 100);
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < buyers.length; i = next++) {
        const buyer = buyers[i] as string;
        const started = performance.now();
        try {
          const believedSold = await buy(buyer);
          attempts.push({ buyer, believedSold, ms: performance.now() - started, atMs: Date.now() });
        } catch (error) {
          attempts.push({
            buyer,
            believedSold: false,
            ms: performance.now() - started,
            error: String((error as Error).message),
          });
        }
      }
    }),
  );
  clearInterval(progress);
  return attempts;
}

main().catch((error: unknown) => {
  const reason = String((error as Error)?.stack ?? error);
  console.error(reason); // for whoever reads our stderr, should the message not get through
  // Exits once the message is sent: exiting at once could drop it, leaving only the exit code.
  if (process.send)
    process.send({ type: 'failed', error: reason } satisfies FromWorker, () => process.exit(1));
  else process.exit(1);
});
