import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync, closeSync, openSync, readFileSync } from 'node:fs';
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

/**
 * Spawns a server (without a shell, so `child.pid` is the server itself) with its stdout and stderr
 * appended to `logFile`, not piped: a server attached to a pipe keeps it open, and its output stays
 * on disk for a post-mortem. Readiness is the caller's: see waitUntilReady().
 */
export function spawnLogged(
  command: string,
  args: string[],
  options: { logFile: string; cwd?: string; env?: NodeJS.ProcessEnv; uid?: number; gid?: number },
): StartedProcess {
  installExitHook();
  const fd = openSync(options.logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      // Servers that refuse root (PostgreSQL, pgbouncer) run as another user: the log file is ours.
      ...(options.uid === undefined ? {} : { uid: options.uid }),
      ...(options.gid === undefined ? {} : { gid: options.gid }),
      stdio: ['ignore', fd, fd],
    });
  } finally {
    closeSync(fd); // the child holds its own copy
  }
  live.add(child);
  // A binary that cannot be spawned emits `error` and may never emit `exit`.
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', (error) => {
      appendFileSync(options.logFile, `failed to spawn ${command}: ${error.message}\n`);
      resolve();
    });
  }).then(() => {
    live.delete(child);
  });
  return { child, exited, logTail: () => tailOf(options.logFile) };
}

/** The last `lines` lines of a log file ('' if there is none). */
export function tailOf(file: string, lines = 40): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

export const hasExited = (child: ChildProcess): boolean =>
  child.exitCode !== null || child.signalCode !== null;

/**
 * Polls `check` every `intervalMs` until it answers true. Throws ServerStartError (with the log tail
 * of the process that failed) when one of `processes` exits first or `timeoutMs` passes; the caller
 * kills what it started.
 */
export async function waitUntilReady(
  label: string,
  processes: readonly StartedProcess[],
  check: () => Promise<boolean>,
  { timeoutMs = 30_000, intervalMs = 100 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const dead = processes.find((p) => hasExited(p.child) || p.child.pid === undefined);
    if (dead) throw new ServerStartError(label, 'it exited during startup', dead.logTail());
    if (await check().catch(() => false)) return;
    if (performance.now() > deadline) {
      throw new ServerStartError(
        label,
        `not ready after ${timeoutMs} ms`,
        processes.map((p) => p.logTail()).join('\n'),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * Sends `signal` (and SIGCONT after it, so a paused process sees it), escalating to SIGKILL after
 * `graceMs`, and resolves on the process's `exit` event.
 */
export async function terminate(started: StartedProcess, signal: NodeJS.Signals, graceMs = 10_000) {
  const { child } = started;
  if (!hasExited(child) && child.pid !== undefined) {
    child.kill(signal);
    if (signal !== 'SIGKILL') child.kill('SIGCONT');
  }
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await started.exited;
  clearTimeout(timer);
}
