import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { once } from 'node:events';
import { ServerStartError } from './errors.js';

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

/** Servers are children of the process that started them; never leave them behind when it exits. */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
}

export interface StartedProcess {
  readonly child: ChildProcess;
  /** The last lines the process printed (stdout and stderr), for error messages. */
  logTail(): string;
  /** Resolves when the process has exited. */
  readonly exited: Promise<void>;
}

/**
 * Spawns a server and resolves once a line of its output matches `ready`. Rejects with
 * ServerStartError (with the output tail) if it exits first or does not get ready in `timeoutMs`.
 */
export async function spawnServer(
  label: string,
  command: string,
  args: string[],
  ready: RegExp,
  options: SpawnOptions & { timeoutMs?: number } = {},
): Promise<StartedProcess> {
  installExitHook();
  const { timeoutMs = 30_000, ...spawnOptions } = options;
  const child = spawn(command, args, { ...spawnOptions, stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  const lines: string[] = [];
  const exited = once(child, 'exit').then(() => {
    live.delete(child);
  });
  exited.catch(() => undefined);

  let resolveReady!: () => void;
  const readyPromise = new Promise<void>((resolve) => (resolveReady = resolve));
  const onData = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line) continue;
      lines.push(line);
      if (lines.length > 40) lines.shift();
      if (ready.test(line)) resolveReady();
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const logTail = () => lines.join('\n');

  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    readyPromise.then(() => 'ready' as const),
    exited.then(() => 'exited' as const),
    once(child, 'error').then(([error]) => `failed to spawn: ${(error as Error).message}`),
    new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(`not ready after ${timeoutMs} ms`), timeoutMs);
    }),
  ]);
  clearTimeout(timer);
  if (outcome !== 'ready') {
    child.kill('SIGKILL');
    throw new ServerStartError(label, outcome === 'exited' ? 'it exited during startup' : outcome, logTail());
  }
  return { child, logTail, exited };
}

/** Sends `signal`, escalating to SIGKILL after `graceMs`, and resolves when the process is gone. */
export async function stopProcess(started: StartedProcess, signal: NodeJS.Signals, graceMs = 10_000) {
  const { child } = started;
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await started.exited;
  clearTimeout(timer);
}
