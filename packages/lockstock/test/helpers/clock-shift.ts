import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findRedisServer, freePort, whichExecutable } from '@lockstock/servers';

const SOURCE = fileURLToPath(new URL('./native/clock-shift.c', import.meta.url));

/**
 * Compiles native/clock-shift.c (an LD_PRELOAD shim shifting the wall clock by an offset read from a
 * file) with the machine's C compiler, once per test file. `skip` says why not when there is none.
 */
export function buildClockShift():
  { library: string; skip?: undefined } | { library?: undefined; skip: string } {
  const compiler = ['cc', 'gcc', 'clang'].map((name) => whichExecutable(name)).find(Boolean);
  if (!compiler) return { skip: 'no C compiler (cc, gcc or clang) to build the clock-shift shim' };
  const dir = mkdtempSync(join(tmpdir(), 'lockstock-clock-shift-'));
  const library = join(dir, 'clock-shift.so');
  try {
    execFileSync(compiler, ['-shared', '-fPIC', '-O2', '-o', library, SOURCE], { stdio: 'pipe' });
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? String(error);
    return { skip: `${compiler} could not build the clock-shift shim: ${stderr.trim()}` };
  }
  return { library };
}

/**
 * A redis-server whose wall clock can jump: started under the clock-shift shim, reading its offset
 * from a file of its own. `shift(ms)` replaces the file (rename: never half a number), so the
 * server's next clock read is `ms` ahead (or behind) of the machine's.
 */
export class ShiftedRedis {
  private constructor(
    readonly port: number,
    private readonly dir: string,
    private readonly offsetFile: string,
    private readonly child: ChildProcess,
    private readonly exited: Promise<unknown>,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(library: string): Promise<ShiftedRedis> {
    const dir = mkdtempSync(join(tmpdir(), 'lockstock-shifted-redis-'));
    const offsetFile = join(dir, 'clock-shift.ms');
    writeFileSync(offsetFile, '0\n');
    const port = await freePort();
    const args = [
      '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
      '--dir', dir, '--daemonize', 'no', '--logfile', '',
    ]; // prettier-ignore
    const child = spawn(findRedisServer(), args, {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LD_PRELOAD: library, LOCKSTOCK_CLOCK_SHIFT_FILE: offsetFile },
    });
    const exited = once(child, 'exit');
    exited.catch(() => undefined);
    const orphan = () => child.kill('SIGKILL'); // never left behind by a test process that exits
    process.once('exit', orphan);
    void exited.then(
      () => process.off('exit', orphan),
      () => undefined,
    );
    let output = '';
    const ready = new Promise<void>((resolve) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (/Ready to accept connections/.test(output)) resolve();
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
    });
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      ready.then(() => 'ready'),
      exited.then(() => 'exited'),
      new Promise((resolve) => (timer = setTimeout(() => resolve('timed out'), 20_000))),
    ]);
    clearTimeout(timer);
    if (outcome !== 'ready') {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`redis-server under the clock-shift shim ${String(outcome)}:\n${output}`);
    }
    return new ShiftedRedis(port, dir, offsetFile, child, exited);
  }

  /** Sets the server's wall clock `ms` ahead of the machine's (negative: behind), from now on. */
  shift(ms: number): void {
    const next = `${this.offsetFile}.next`;
    writeFileSync(next, `${Math.trunc(ms)}\n`);
    renameSync(next, this.offsetFile);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGKILL');
      await this.exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
