import { fork, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataDirBusyError, DataDirClaim, takeoverFile } from '../../src/cli/data-dir.js';

// Many OS processes race to take over one stale data-directory claim (its owner died): exactly one
// may win, or two serves would run a redis-server each on one append-only file.

const racerScript = fileURLToPath(new URL('../fixtures/claim-racer.mjs', import.meta.url));
const RACERS = 16;
const ROUNDS = 30;
/**
 * Odd rounds pass LOCKSTOCK_TEST_CLAIM_PAUSE_MS: each racer pauses between judging the claim stale
 * and taking it over, so every racer has judged it before the first acts (the window the defect
 * needed is then always open: without the pause, a race is won or lost in microseconds). Even
 * rounds race without it.
 */
const PAUSE_MS = 150;

interface Result {
  type: 'result';
  outcome: 'claimed' | 'busy' | 'error';
  pid: number;
  named?: number;
  message?: string;
}

/** A forked racer: its messages, in order, awaited one at a time. */
class Racer {
  private readonly inbox: Array<Record<string, unknown>> = [];
  private waiter: ((message: Record<string, unknown>) => void) | undefined;
  readonly exited: Promise<unknown>;

  constructor(readonly child: ChildProcess) {
    child.on('message', (message: Record<string, unknown>) => {
      if (this.waiter) {
        const waiter = this.waiter;
        this.waiter = undefined;
        waiter(message);
      } else this.inbox.push(message);
    });
    this.exited = once(child, 'exit');
  }

  next(): Promise<Record<string, unknown>> {
    const queued = this.inbox.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      this.waiter = resolve;
      void this.exited.then(() => reject(new Error(`racer ${this.child.pid} exited`)));
    });
  }
}

/** A pid no process has: one that ran and exited (pids are not reused this soon). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await once(child, 'exit');
  const pid = child.pid!;
  expect(() => process.kill(pid, 0)).toThrow(/ESRCH/);
  return pid;
}

describe('taking over a stale data-directory claim', () => {
  const dirs: string[] = [];
  let racers: Racer[] = [];

  beforeAll(async () => {
    // All started before any is awaited; each waits for its `claim` message (the start signal).
    racers = Array.from(
      { length: RACERS },
      () => new Racer(fork(racerScript, [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] })),
    );
    for (const racer of racers) expect((await racer.next()).type).toBe('ready');
  });

  afterAll(async () => {
    for (const racer of racers) racer.child.kill('SIGKILL');
    await Promise.all(racers.map((racer) => racer.exited));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it(`${RACERS} processes race for one stale claim, ${ROUNDS} times: exactly one wins each time`, async () => {
    const dead = await deadPid();
    for (let round = 0; round < ROUNDS; round++) {
      const dir = mkdtempSync(join(tmpdir(), 'lockstock-claim-race-'));
      dirs.push(dir);
      // What a serve that was SIGKILLed leaves behind.
      const stale = {
        pid: dead,
        command: 'serve',
        startedAt: new Date(Date.now() - 60_000 - round).toISOString(),
      };
      writeFileSync(join(dir, 'owner.json'), `${JSON.stringify(stale)}\n`);

      const pauseMs = round % 2 === 1 ? PAUSE_MS : 0;
      const answers = racers.map((racer) => racer.next());
      for (const racer of racers) racer.child.send({ type: 'claim', dir, pauseMs });
      const results = (await Promise.all(answers)) as unknown as Result[];

      const context = `round ${round} (pause ${pauseMs} ms): ${JSON.stringify(results)}`;
      const winners = results.filter((result) => result.outcome === 'claimed').map((result) => result.pid);
      expect(winners, context).toHaveLength(1);
      expect(
        results.filter((result) => result.outcome === 'busy'),
        context,
      ).toHaveLength(RACERS - 1);
      // The claim on disk is the winner's, and nothing else of the takeover is left in the directory.
      const owner = JSON.parse(readFileSync(join(dir, 'owner.json'), 'utf8')) as { pid: number };
      expect(owner.pid, context).toBe(winners[0]);
      expect(readdirSync(dir), context).toEqual(['owner.json']);
    }
  }, 600_000);
});

describe('a takeover that did not finish', () => {
  const dirs: string[] = [];
  const freshDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'lockstock-claim-takeover-'));
    dirs.push(dir);
    return dir;
  };
  const claimOf = (pid: number, startedAt: string) =>
    `${JSON.stringify({ pid, command: 'serve', startedAt })}\n`;

  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('does not block the next when its takers died midway; their markers are removed', async () => {
    const dir = freshDir();
    const dead = await deadPid();
    const stale = claimOf(dead, '2025-01-01T00:00:00.000Z');
    writeFileSync(join(dir, 'owner.json'), stale);
    // Two takers of this claim died after winning their level; one of an older claim is left too.
    writeFileSync(takeoverFile(dir, stale, 0), claimOf(dead, '2025-01-01T00:01:00.000Z'));
    writeFileSync(takeoverFile(dir, stale, 1), claimOf(dead, '2025-01-01T00:02:00.000Z'));
    writeFileSync(takeoverFile(dir, 'an older claim', 0), claimOf(dead, '2024-01-01T00:00:00.000Z'));

    const claim = DataDirClaim.claim(dir, 'serve');
    const owner = JSON.parse(readFileSync(join(dir, 'owner.json'), 'utf8')) as { pid: number };
    expect(owner.pid).toBe(process.pid);
    expect(readdirSync(dir)).toEqual(['owner.json']);
    claim.release();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('makes a claim busy while its taker lives, naming the taker, and leaves the stale claim to it', async () => {
    const dir = freshDir();
    const stale = claimOf(await deadPid(), '2025-01-01T00:00:00.000Z');
    writeFileSync(join(dir, 'owner.json'), stale);
    const taker = process.ppid; // a live process other than this one
    writeFileSync(takeoverFile(dir, stale, 0), claimOf(taker, '2025-01-01T00:01:00.000Z'));

    let refused: unknown;
    try {
      DataDirClaim.claim(dir, 'serve');
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(DataDirBusyError);
    expect((refused as DataDirBusyError).owner.pid).toBe(taker);
    expect(readFileSync(join(dir, 'owner.json'), 'utf8')).toBe(stale);
    expect(readdirSync(dir).sort()).toEqual(['owner.json', basename(takeoverFile(dir, stale, 0))].sort());
  });
});
