import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

/** A `lockstock` CLI process (the built one) whose output lines can be awaited. */
export class CliProcess {
  private readonly lines: string[] = [];
  private readonly waiters: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];
  readonly exited: Promise<unknown>;

  constructor(readonly child: ChildProcess) {
    const onData = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) {
        if (!line) continue;
        this.lines.push(line);
        for (const waiter of [...this.waiters]) {
          if (!waiter.pattern.test(line)) continue;
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          waiter.resolve(line);
        }
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    this.exited = once(child, 'exit');
  }

  /** Resolves with the first output line matching `pattern` (already printed or still to come). */
  waitForLine(pattern: RegExp): Promise<string> {
    const seen = this.lines.find((line) => pattern.test(line));
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      this.waiters.push({ pattern, resolve });
      void this.exited.then(() =>
        reject(new Error(`process exited before printing ${pattern}:\n${this.output()}`)),
      );
    });
  }

  output(): string {
    return this.lines.slice(-30).join('\n');
  }

  /** Every line printed so far. */
  allLines(): readonly string[] {
    return this.lines;
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): void {
    this.child.kill(signal);
  }
}

/** Runs the built CLI; an `env` entry set to undefined removes that variable (a suite's default). */
export function spawnCli(
  args: string[],
  env: Record<string, string | undefined> = {},
  options: { cwd?: string } = {},
): CliProcess {
  const child = spawn(process.execPath, [cli, ...args], {
    ...options,
    env: Object.fromEntries(
      Object.entries({ ...process.env, LOG_LEVEL: 'warn', ...env }).filter(
        ([, value]) => value !== undefined,
      ),
    ),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new CliProcess(child);
}

/** Polls a URL until it answers 200 (observing readiness, bounded by the test timeout). */
export async function waitUntilHealthy(url: string): Promise<void> {
  for (;;) {
    const ok = await fetch(url).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Runs the CLI with stdout and stderr on a pseudo-terminal of `columns` columns (util-linux
 * `script`), as a user at a terminal sees it; resolves with the exit code and the output as lines:
 * a return to the start of the line (how a progress bar redraws) starts a new line, and the other
 * escape sequences (colours, cursor) are removed.
 */
export async function runInTerminal(
  args: string[],
  columns: number,
): Promise<{ code: number | null; output: string; raw: string }> {
  const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
  const command = `stty cols ${columns} rows 50; exec ${[process.execPath, cli, ...args].map(quote).join(' ')}`;
  const child = spawn('script', ['-qefc', command, '/dev/null'], {
    env: { ...process.env, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const chunks: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
  const [code] = (await once(child, 'close')) as [number | null];
  // Decoded once: a chunk may end inside a multi-byte character (the table's box drawing).
  const raw = Buffer.concat(chunks).toString('utf8');
  const output = raw
    .replace(/\x1b\[(?:1G|2K|0J)|\r/g, '\n') // eslint-disable-line no-control-regex
    .replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '') // eslint-disable-line no-control-regex
    .replace(/\n{2,}/g, '\n');
  return { code, output, raw };
}

/**
 * Runs the CLI to its end with piped output; stdout and stderr apart, each decoded whole. `env` adds
 * to the inherited environment (test hooks).
 */
export async function runCli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [cli, ...args], {
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
  const [code] = (await once(child, 'close')) as [number | null];
  return {
    code,
    stdout: Buffer.concat(stdout).toString('utf8'),
    stderr: Buffer.concat(stderr).toString('utf8'),
  };
}
