import { fork } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { parseHistory, type HistoryEvent } from '../../src/checker/index.js';
import { Contender, fixturePath } from './processes.js';

/**
 * What the crash tests and the session backends' fault rows repeat: fork fixture processes that are
 * always killed at the end of the file (resumed first: a stopped process ignores SIGKILL until
 * continued on some kernels, and never exits while stopped), give each a JSON Lines history file of
 * its own, and time how soon a lock passes on after its holder dies.
 */
export interface Fixtures {
  /**
   * Forks `fixture` with `args` (as JSON, its one argument), with `env` added to this process's
   * environment; killed after the file's tests.
   */
  fork(fixture: string, args: object, env?: Record<string, string>): Contender;
  /** A fresh history file for one fixture process (in a directory removed after the file's tests). */
  historyFile(label: string): string;
  /** Every event the fixture processes appended to their history files so far. */
  histories(): HistoryEvent[];
}

export function useFixtures(): Fixtures {
  const forked: Contender[] = [];
  let dir: string | undefined;
  let files = 0;
  afterAll(async () => {
    for (const fixture of forked) {
      fixture.kill('SIGCONT');
      fixture.kill('SIGKILL');
    }
    await Promise.all(
      forked.map((f) => (f.child.exitCode === null && f.child.signalCode === null ? f.exited : undefined)),
    );
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  const directory = () => (dir ??= mkdtempSync(join(tmpdir(), 'lockstock-fault-histories-')));
  return {
    fork(fixture, args, env) {
      const contender = new Contender(
        fork(fixturePath(fixture), [JSON.stringify(args)], {
          stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
          ...(env ? { env: { ...process.env, ...env } } : {}),
        }),
      );
      forked.push(contender);
      return contender;
    },
    historyFile: (label) => join(directory(), `${++files}-${label}.jsonl`),
    histories() {
      if (!dir) return [];
      return readdirSync(dir)
        .filter((file) => file.endsWith('.jsonl'))
        .flatMap((file) => parseHistory(readFileSync(join(dir!, file), 'utf8')));
    },
  };
}

/** Events of several writers in one history, in time order (monotonic ns: one clock per machine). */
export function mergeHistories(...parts: ReadonlyArray<readonly HistoryEvent[]>): HistoryEvent[] {
  return parts
    .flat()
    .map((event, i) => ({ event, i, t: BigInt(event.t as string) }))
    .sort((a, b) => (a.t < b.t ? -1 : a.t > b.t ? 1 : a.i - b.i))
    .map(({ event }) => event);
}

/** Milliseconds since `since` (a `process.hrtime.bigint()` reading). */
export const msSince = (since: bigint): number => Number(process.hrtime.bigint() - since) / 1e6;

/**
 * SIGKILLs `holder` and resolves with how long `waiting` — an acquire already queued behind it — took
 * to return after the signal was sent (the process's teardown included), and its result, once the
 * holder has exited.
 */
export async function killAndTime<T>(
  holder: Contender,
  waiting: Promise<T>,
): Promise<{ result: T; killedAt: bigint; freedAfterMs: number }> {
  const killedAt = process.hrtime.bigint();
  holder.kill('SIGKILL');
  const result = await waiting;
  const freedAfterMs = msSince(killedAt);
  await holder.exited;
  return { result, killedAt, freedAfterMs };
}

/** What fixtures/fault-holder.mjs reports of its hold's loss, when its signal aborted. */
export interface LossReport {
  readonly at: string;
  readonly reason: string;
  readonly cause?: string;
}

/**
 * When an overtaken holder's signal aborted, in words, counted from `since` (described by `after`) —
 * or that it had not yet when the holder wrote and released (its backend had not told it): then even
 * a holder that looked at its signal before writing would have written.
 */
export function lossSeen(
  lost: LossReport | undefined,
  since: bigint,
  after: string,
  options: { cause?: boolean } = {},
): { words: string; ms?: number } {
  if (lost === undefined) {
    return {
      words:
        'its signal had not aborted yet when it wrote and released (the news had not reached it): even a holder that looked first would have written',
    };
  }
  const ms = Number(BigInt(lost.at) - since) / 1e6;
  const shown = Math.abs(ms) < 10 ? ms.toFixed(1) : String(Math.round(ms));
  const cause = options.cause !== false && lost.cause ? ` (${lost.cause})` : '';
  return { words: `its signal aborted ${shown} ms after ${after}${cause}`, ms };
}
