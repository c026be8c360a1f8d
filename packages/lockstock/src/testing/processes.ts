/**
 * The suite's fixture processes (fixtures/*.js), forked with an IPC channel: each sends typed
 * messages ('ready', 'done', 'acquired'), the suite answers 'go' (a start barrier).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

/** A message of a fixture process. */
export interface FixtureMessage {
  type: string;
  [key: string]: unknown;
}

/** A forked fixture process. */
export class FixtureProcess {
  private readonly messages: FixtureMessage[] = [];
  private readonly waiting: Array<{ type: string; resolve: (m: FixtureMessage) => void }> = [];
  readonly exited: Promise<[number | null, NodeJS.Signals | null]>;

  constructor(readonly child: ChildProcess) {
    child.on('message', (message: FixtureMessage) => {
      const index = this.waiting.findIndex((w) => w.type === message.type);
      if (index >= 0) this.waiting.splice(index, 1)[0]?.resolve(message);
      else this.messages.push(message);
    });
    this.exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  }

  /** The next message of `type` (rejects if the process exits first). */
  next(type: string): Promise<FixtureMessage> {
    const index = this.messages.findIndex((m) => m.type === type);
    if (index >= 0) return Promise.resolve(this.messages.splice(index, 1)[0]!);
    return new Promise((resolve, reject) => {
      this.waiting.push({ type, resolve });
      void this.exited.then(([code, signal]) =>
        reject(new Error(`fixture exited (code ${code}, signal ${signal}) before sending "${type}"`)),
      );
    });
  }

  send(message: FixtureMessage): void {
    this.child.send(message);
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    this.child.kill(signal);
  }
}

/**
 * Where a fixture's JavaScript is. Run from the package's build, it sits beside this module; run from
 * its TypeScript sources (lockstock's own tests), the fixtures are taken from the build (dist/), as
 * the backend modules they import load the built package too.
 */
export function fixturePath(name: string): string {
  const here = new URL(`./fixtures/${name}.js`, import.meta.url);
  if (!import.meta.url.endsWith('.ts')) return fileURLToPath(here);
  return fileURLToPath(here).replace(/([/\\])src([/\\])testing([/\\])/, '$1dist$2testing$3');
}

/** Forks fixture `name` once per argument (each a JSON string); stderr is passed through. */
export function forkFixtures(name: string, args: readonly string[]): FixtureProcess[] {
  return args.map(
    (arg) =>
      new FixtureProcess(fork(fixturePath(name), [arg], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] })),
  );
}

/** Start barrier: waits until every process is ready, then lets them all go at once. */
export async function startTogether(processes: readonly FixtureProcess[]): Promise<void> {
  await Promise.all(processes.map((p) => p.next('ready')));
  for (const p of processes) p.send({ type: 'go' });
}

/** A holder process (fixtures/holder.js) of `module`'s backend with `config`. */
export function forkHolders(
  module: string,
  config: unknown,
  hold: { subject: string; name: string; mode: string; ms: number; holds: number; label?: string },
): FixtureProcess[] {
  return forkFixtures('holder', [JSON.stringify({ backend: { module, config }, ...hold })]);
}
