import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

export interface Message {
  type: string;
  [key: string]: unknown;
}

/** A forked fixture process speaking the ready/go/done protocol over IPC. */
export class Contender {
  private readonly messages: Message[] = [];
  private readonly waiting: Array<{ type: string; resolve: (m: Message) => void }> = [];
  readonly exited: Promise<[number | null, NodeJS.Signals | null]>;

  constructor(readonly child: ChildProcess) {
    child.on('message', (message: Message) => {
      const index = this.waiting.findIndex((w) => w.type === message.type);
      if (index >= 0) this.waiting.splice(index, 1)[0]?.resolve(message);
      else this.messages.push(message);
    });
    this.exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  }

  /** Resolves with the next message of `type` (or rejects if the process exits first). */
  next(type: string): Promise<Message> {
    const index = this.messages.findIndex((m) => m.type === type);
    if (index >= 0) return Promise.resolve(this.messages.splice(index, 1)[0] as Message);
    return new Promise((resolve, reject) => {
      this.waiting.push({ type, resolve });
      void this.exited.then(([code, signal]) =>
        reject(new Error(`fixture exited (code ${code}, signal ${signal}) before sending "${type}"`)),
      );
    });
  }

  send(message: Message): void {
    this.child.send(message);
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    this.child.kill(signal);
  }
}

export function fixturePath(name: string): string {
  return fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
}

/** Forks one fixture process per entry of `argsPerProcess`; stderr is passed through for debugging. */
export function forkFixtures(name: string, argsPerProcess: string[][]): Contender[] {
  return argsPerProcess.map(
    (args) => new Contender(fork(fixturePath(name), args, { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] })),
  );
}

/** Start barrier: waits until every process is ready, then releases them all at once. */
export async function startTogether(contenders: Contender[]): Promise<void> {
  await Promise.all(contenders.map((c) => c.next('ready')));
  for (const c of contenders) c.send({ type: 'go' });
}
